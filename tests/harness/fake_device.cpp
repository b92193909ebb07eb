#include "tests/harness/fake_device.h"

#include <sys/mman.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "src/common/serial_worker.h"

using namespace tutti;

namespace tutti_test {

struct FakeDevice::Allocation {
  char* address;  // what tutti sees: reserved, never readable
  char* bytes;    // where the data is
  size_t size;
  int device;
};

struct FakeDevice::Stream {
  SerialWorker worker;
};

struct FakeDevice::Latch {
  std::mutex mutex;
  std::condition_variable opened;
  bool open = false;
};

namespace {

struct Event {
  std::mutex mutex;
  std::condition_variable done;
  bool reached = false;
};

thread_local int tCurrentDevice = 0;

}  // namespace

FakeDevice::FakeDevice(int devices, std::vector<std::string> busIds)
    : devices_(devices), busIds_(std::move(busIds)), defaultStream_(new Stream) {}

FakeDevice::~FakeDevice() {
  defaultStream_.reset();
  for (auto& a : allocations_) {
    munmap(a->address, a->size);
    std::free(a->bytes);
  }
}

void* FakeDevice::alloc(size_t bytes, int device) {
  bytes = (bytes + 4095) / 4096 * 4096;
  void* address = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (address == MAP_FAILED) throw std::runtime_error("fake device: mmap failed");
  auto a = std::make_unique<Allocation>(
      Allocation{static_cast<char*>(address), static_cast<char*>(std::aligned_alloc(4096, bytes)), bytes, device});
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.push_back(std::move(a));
  return address;
}

void FakeDevice::free(void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < allocations_.size(); ++i)
    if (allocations_[i]->address == p) {
      munmap(allocations_[i]->address, allocations_[i]->size);
      std::free(allocations_[i]->bytes);
      allocations_.erase(allocations_.begin() + static_cast<long>(i));
      return;
    }
}

void* FakeDevice::backing(const void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* c = static_cast<const char*>(p);
  for (auto& a : allocations_)
    if (c >= a->address && c < a->address + a->size) return a->bytes + (c - a->address);
  return const_cast<void*>(p);
}

void FakeDevice::upload(void* device, const void* host, size_t bytes) {
  std::memcpy(backing(device), host, bytes);
}

void FakeDevice::download(void* host, const void* device, size_t bytes) {
  std::memcpy(host, backing(device), bytes);
}

void FakeDevice::hold(DeviceStream s) {
  auto latch = std::make_shared<Latch>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    latch_ = latch;
  }
  streamOf(s).worker.post([latch] {
    std::unique_lock<std::mutex> lock(latch->mutex);
    latch->opened.wait(lock, [&] { return latch->open; });
  });
}

void FakeDevice::release() {
  std::shared_ptr<Latch> latch;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    latch = latch_;
  }
  if (!latch) return;
  std::lock_guard<std::mutex> lock(latch->mutex);
  latch->open = true;
  latch->opened.notify_all();
}

int FakeDevice::hostFunctionsRun() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hostFunctions_;
}

Result<int> FakeDevice::currentDevice() { return tCurrentDevice; }

Status FakeDevice::setDevice(int device) {
  if (device < 0 || device >= devices_)
    return Status(Code::kCudaError, "emulated device " + std::to_string(device) + " does not exist");
  tCurrentDevice = device;
  return Status::Ok();
}

Result<std::string> FakeDevice::pciBusId(int device) {
  if (device < 0 || device >= static_cast<int>(busIds_.size()))
    return Status(Code::kCudaError, "emulated device has no PCI bus id");
  return busIds_[device];
}

PointerInfo FakeDevice::pointerInfo(const void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* c = static_cast<const char*>(p);
  for (auto& a : allocations_)
    if (c >= a->address && c < a->address + a->size) return {true, a->device};
  return {};
}

FakeDevice::Stream& FakeDevice::streamOf(DeviceStream s) {
  return s ? *static_cast<Stream*>(s) : *defaultStream_;
}

Result<DeviceStream> FakeDevice::createStream() { return static_cast<DeviceStream>(new Stream); }

void FakeDevice::destroyStream(DeviceStream s) { delete static_cast<Stream*>(s); }

Result<DeviceEvent> FakeDevice::recordEvent(DeviceStream s) {
  auto* e = new Event;
  streamOf(s).worker.post([e] {
    std::lock_guard<std::mutex> lock(e->mutex);
    e->reached = true;
    e->done.notify_all();
  });
  return static_cast<DeviceEvent>(e);
}

Status FakeDevice::waitEvent(DeviceEvent ev) {
  auto* e = static_cast<Event*>(ev);
  std::unique_lock<std::mutex> lock(e->mutex);
  e->done.wait(lock, [e] { return e->reached; });
  return Status::Ok();
}

// Destroying an event before the stream reached it is legal in CUDA: the
// record still happens. The emulation lets that one leak.
void FakeDevice::destroyEvent(DeviceEvent ev) {
  auto* e = static_cast<Event*>(ev);
  bool reached;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    reached = e->reached;
  }
  if (reached) delete e;
}

Status FakeDevice::synchronize(DeviceStream s) {
  streamOf(s).worker.drain();
  return Status::Ok();
}

Status FakeDevice::launchHostFunc(DeviceStream s, void (*fn)(void*), void* arg) {
  streamOf(s).worker.post([this, fn, arg] {
    fn(arg);
    std::lock_guard<std::mutex> lock(mutex_);
    ++hostFunctions_;
  });
  return Status::Ok();
}

Result<void*> FakeDevice::allocPinned(size_t bytes) {
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!p) return SystemError("emulated pinned allocation failed");
  return p;
}

void FakeDevice::freePinned(void* p) { std::free(p); }

Status FakeDevice::copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch,
                               size_t width, size_t rows, DeviceStream s) {
  if (width > dstPitch && rows > 1) return InvalidArgument("emulated copy: width exceeds pitch");
  char* d = static_cast<char*>(backing(dst));
  const char* from = static_cast<const char*>(backing(src));
  streamOf(s).worker.post([=] {
    for (size_t r = 0; r < rows; ++r) std::memmove(d + r * dstPitch, from + r * srcPitch, width);
  });
  return Status::Ok();
}

}  // namespace tutti_test
