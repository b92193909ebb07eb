#include "src/device/emulated_device.h"

#include <execinfo.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "kernels/cpu/reduce_table.h"
#include "src/common/serial_worker.h"

namespace tutti {

struct EmulatedDevice::Allocation {
  char* address;  // what tutti sees: reserved, never readable
  char* bytes;    // where the data is: a shared mapping of `fd`
  size_t size;
  int device;
  int fd;         // the memfd (exported allocations), -1 for opened ones
  // Opened ones: whose handle, and how many opens the closes must match.
  int32_t sourcePid = 0;
  int32_t sourceFd = -1;
  int opens = 0;
};

struct EmulatedDevice::HostRange {
  const char* base;
  size_t bytes;
  bool pinned;  // allocPinned's (else registerHost's)
};

struct EmulatedDevice::Stream {
  explicit Stream(int d, bool b = false) : device(d), blocking(b) {}
  const int device;  // a stream belongs to the device current when it was made
  const bool blocking;  // made without cudaStreamNonBlocking: ordered with the legacy stream
  SerialWorker worker;
  std::atomic<bool> capturing{false};  // beginCapture's
  EmulatedDevice::Graph captured;      // under the device's mutex
};

struct EmulatedDevice::Latch {
  std::mutex mutex;
  std::condition_variable opened;
  bool open = false;
};

namespace {

// Records are counted on the caller's thread and reached on the stream's:
// the event is done when every record so far has been reached.
struct Event {
  explicit Event(int d) : device(d) {}
  const int device;  // the device current when it was made
  std::mutex mutex;
  std::condition_variable done;
  uint64_t recorded = 0;
  uint64_t reached = 0;
  bool captured = false;  // its last record went into a graph
};

}  // namespace

void EmulatedDevice::enqueue(Stream& stream, std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stream.capturing) {
      stream.captured.push_back(std::move(work));
      return;
    }
  }
  post(stream, std::move(work));
}

// As CUDA's legacy default stream: its work waits for all work queued
// before on the device's blocking streams, and theirs for its. Each of
// those streams gets a latch at its current end to wait for.
void EmulatedDevice::post(Stream& stream, std::function<void()> work) {
  std::vector<std::shared_ptr<Latch>> before;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto mark = [&before](Stream& other) {
      auto latch = std::make_shared<Latch>();
      other.worker.post([latch] {
        std::lock_guard<std::mutex> lock(latch->mutex);
        latch->open = true;
        latch->opened.notify_all();
      });
      before.push_back(latch);
    };
    Stream& legacy = *defaultStreams_[stream.device];
    if (&stream == &legacy) {
      for (Stream* b : blocking_)
        if (b->device == stream.device) mark(*b);
    } else if (stream.blocking) {
      mark(legacy);
    }
  }
  if (before.empty()) {
    stream.worker.post(std::move(work));
    return;
  }
  stream.worker.post([before = std::move(before), work = std::move(work)] {
    for (const auto& latch : before) {
      std::unique_lock<std::mutex> lock(latch->mutex);
      latch->opened.wait(lock, [&] { return latch->open; });
    }
    work();
  });
}

// Records are counted on the caller's thread and reached on the stream's:
// the event is done when every record so far has been reached. A captured
// record is a node of the graph, not of the stream.
void EmulatedDevice::recordOn(Stream& stream, void* event) {
  auto* e = static_cast<Event*>(event);
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    e->captured = stream.capturing;
    if (e->captured) return;
    target = ++e->recorded;
  }
  post(stream, [e, target] {
    std::lock_guard<std::mutex> lock(e->mutex);
    e->reached = std::max(e->reached, target);
    e->done.notify_all();
  });
}

namespace {

struct IpcPayload {
  int32_t pid;
  int32_t fd;
  uint64_t size;
};

thread_local int tCurrentDevice = 0;

}  // namespace

// Bus ids the test did not give are made up, distinct per device.
EmulatedDevice::EmulatedDevice(int devices, std::vector<std::string> busIds)
    : devices_(devices), busIds_(std::move(busIds)), kernelsLoaded_(devices, 0), contexts_(devices, 0) {
  for (int d = 0; d < devices_; ++d) defaultStreams_.push_back(std::make_unique<Stream>(d));
  for (int d = static_cast<int>(busIds_.size()); d < devices_; ++d) {
    char id[32];
    snprintf(id, sizeof(id), "0000:%02x:00.0", 0x10 + d);
    busIds_.push_back(id);
  }
}

namespace {
void unmapAllocation(char* address, char* bytes, size_t size, int fd) {
  munmap(address, size);
  munmap(bytes, size);
  if (fd >= 0) close(fd);
}
}  // namespace

EmulatedDevice::~EmulatedDevice() {
  stopWorkers_ = true;
  defaultStreams_.clear();
  for (auto& a : allocations_) unmapAllocation(a->address, a->bytes, a->size, a->fd);
}

void* EmulatedDevice::addAllocation(char* bytes, size_t size, int device, int fd) {
  void* address = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (address == MAP_FAILED) throw std::runtime_error("fake device: mmap failed");
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.push_back(std::make_unique<Allocation>(Allocation{static_cast<char*>(address), bytes, size, device, fd}));
  return address;
}

void* EmulatedDevice::alloc(size_t bytes, int device) {
  if (Status st = notForked(); !st.ok()) throw std::runtime_error(st.message());
  bytes = (bytes + 4095) / 4096 * 4096;
  int fd = memfd_create("tutti-fake-device", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0)
    throw std::runtime_error("fake device: memfd failed");
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) throw std::runtime_error("fake device: mmap failed");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    contexts_.at(device) = 1;
  }
  return addAllocation(static_cast<char*>(data), bytes, device, fd);
}

void EmulatedDevice::unmap(void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < allocations_.size(); ++i)
    if (allocations_[i]->address == p) {
      const Allocation& a = *allocations_[i];
      unmapAllocation(a.address, a.bytes, a.size, a.fd);
      allocations_.erase(allocations_.begin() + static_cast<long>(i));
      return;
    }
}

void* EmulatedDevice::backing(const void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* c = static_cast<const char*>(p);
  for (auto& a : allocations_)
    if (c >= a->address && c < a->address + a->size) return a->bytes + (c - a->address);
  return const_cast<void*>(p);
}

void EmulatedDevice::upload(void* device, const void* host, size_t bytes) {
  std::memcpy(backing(device), host, bytes);
}

void EmulatedDevice::download(void* host, const void* device, size_t bytes) {
  std::memcpy(host, backing(device), bytes);
}

void EmulatedDevice::hold(DeviceStream s) {
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

void EmulatedDevice::release() {
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

EmulatedDevice::Counters EmulatedDevice::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

Result<int> EmulatedDevice::currentDevice() { return tCurrentDevice; }

// CUDA does not survive fork: a child of a process that used the device
// fails every call (cudaErrorInitializationError).
Status EmulatedDevice::notForked() const {
  if (getpid() == owner_) return Status::Ok();
  return Status(Code::kCudaError, "emulated device: initialization error: this process (pid " +
                                      std::to_string(getpid()) + ") was forked from one that used the device (pid " +
                                      std::to_string(owner_) + ")");
}

Status EmulatedDevice::setDevice(int device) {
  TUTTI_RETURN_IF_ERROR(notForked());
  if (device < 0 || device >= devices_)
    return Status(Code::kCudaError, "emulated device " + std::to_string(device) + " does not exist");
  tCurrentDevice = device;
  useContext();  // as cudaSetDevice since CUDA 12
  return Status::Ok();
}

void EmulatedDevice::useContext() {
  std::lock_guard<std::mutex> lock(mutex_);
  contexts_[tCurrentDevice] = 1;
}

bool EmulatedDevice::contextActive(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  return device >= 0 && device < devices_ && contexts_[device];
}

Result<std::string> EmulatedDevice::pciBusId(int device) {
  if (device < 0 || device >= static_cast<int>(busIds_.size()))
    return Status(Code::kCudaError, "emulated device has no PCI bus id");
  return busIds_[device];
}

PointerInfo EmulatedDevice::pointerInfo(const void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* c = static_cast<const char*>(p);
  for (auto& a : allocations_)
    if (c >= a->address && c < a->address + a->size) return {true, a->device};
  return {};
}

EmulatedDevice::Stream& EmulatedDevice::streamOf(DeviceStream s) {
  return s ? *static_cast<Stream*>(s) : *defaultStreams_[tCurrentDevice];  // one legacy stream per device
}

Result<DeviceStream> EmulatedDevice::createStream() {
  TUTTI_RETURN_IF_ERROR(notForked());
  useContext();
  return static_cast<DeviceStream>(new Stream(tCurrentDevice));
}

Result<DeviceStream> EmulatedDevice::createBlockingStream() {
  TUTTI_RETURN_IF_ERROR(notForked());
  useContext();
  auto* s = new Stream(tCurrentDevice, true);
  std::lock_guard<std::mutex> lock(mutex_);
  blocking_.push_back(s);
  return static_cast<DeviceStream>(s);
}

// As CUDA: an event is recorded only on a stream of its own device, and a
// kernel launched only on a stream of the current device.
Status EmulatedDevice::sameDevice(int eventOrCurrent, DeviceStream s, const char* what) {
  const int streamDevice = streamOf(s).device;
  if (eventOrCurrent == streamDevice) return Status::Ok();
  return Status(Code::kCudaError, std::string("emulated device: ") + what + " on device " +
                                      std::to_string(eventOrCurrent) + " with a stream of device " +
                                      std::to_string(streamDevice) + " (invalid resource handle)");
}

void EmulatedDevice::destroyStream(DeviceStream s) {
  auto* stream = static_cast<Stream*>(s);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocking_.erase(std::remove(blocking_.begin(), blocking_.end(), stream), blocking_.end());
  }
  delete stream;
}

Result<DeviceEvent> EmulatedDevice::recordEvent(DeviceStream s) {
  TUTTI_RETURN_IF_ERROR(sticky());
  TUTTI_RETURN_IF_ERROR(sameDevice(tCurrentDevice, s, "an event recorded"));
  useContext();
  auto* e = new Event(tCurrentDevice);
  recordOn(streamOf(s), e);
  return static_cast<DeviceEvent>(e);
}

Result<DeviceEvent> EmulatedDevice::createEvent() {
  TUTTI_RETURN_IF_ERROR(notForked());
  useContext();
  return static_cast<DeviceEvent>(new Event(tCurrentDevice));
}

bool EmulatedDevice::eventCaptured(DeviceEvent ev) {
  auto* e = static_cast<Event*>(ev);
  std::lock_guard<std::mutex> lock(e->mutex);
  return e->captured;
}

Status EmulatedDevice::recordInto(DeviceEvent e, DeviceStream s) {
  TUTTI_RETURN_IF_ERROR(sticky());
  TUTTI_RETURN_IF_ERROR(sameDevice(static_cast<Event*>(e)->device, s, "an event recorded"));
  recordOn(streamOf(s), e);
  return Status::Ok();
}

Result<bool> EmulatedDevice::eventDone(DeviceEvent ev) {
  TUTTI_RETURN_IF_ERROR(sticky());
  auto* e = static_cast<Event*>(ev);
  std::lock_guard<std::mutex> lock(e->mutex);
  return e->reached == e->recorded;
}

Status EmulatedDevice::waitEvent(DeviceEvent ev) {
  TUTTI_RETURN_IF_ERROR(sticky());
  auto* e = static_cast<Event*>(ev);
  std::unique_lock<std::mutex> lock(e->mutex);
  const uint64_t target = e->recorded;
  e->done.wait(lock, [e, target] { return e->reached >= target; });
  return Status::Ok();
}

// Destroying an event before the stream reached it is legal in CUDA: the
// record still happens. The emulation lets that one leak.
void EmulatedDevice::destroyEvent(DeviceEvent ev) {
  auto* e = static_cast<Event*>(ev);
  bool reached;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    reached = e->reached == e->recorded;
  }
  if (reached) delete e;
}

Status EmulatedDevice::synchronize(DeviceStream s) {
  TUTTI_RETURN_IF_ERROR(sticky());
  useContext();
  streamOf(s).worker.drain();
  return Status::Ok();
}

// As cuStreamWaitValue32: the word must be mapped into the device, and the
// stream (not the caller) waits. Nothing else of the process is held.
Status EmulatedDevice::waitWordAsync(DeviceStream s, const uint32_t* word, uint32_t value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (placeOf(word, sizeof(*word)) != Place::kMappedHost)
      return Status(Code::kCudaError, "emulated device: a stream wait on a word not mapped into the device");
    ++gatesPending_;
  }
  enqueue(streamOf(s), [this, word, value] {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++gatesHolding_;
    }
    while (static_cast<int32_t>(__atomic_load_n(word, __ATOMIC_ACQUIRE) - value) < 0)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    std::lock_guard<std::mutex> lock(mutex_);
    --gatesHolding_;
    --gatesPending_;
    ++counters_.gates;
  });
  return Status::Ok();
}

void EmulatedDevice::beginCapture(DeviceStream s) {
  Stream& stream = streamOf(s);
  std::lock_guard<std::mutex> lock(mutex_);
  stream.captured.clear();
  stream.capturing = true;
}

EmulatedDevice::Graph EmulatedDevice::endCapture(DeviceStream s) {
  Stream& stream = streamOf(s);
  std::lock_guard<std::mutex> lock(mutex_);
  stream.capturing = false;
  return std::move(stream.captured);
}

void EmulatedDevice::replay(const Graph& graph, DeviceStream s) {
  for (const auto& node : graph) enqueue(streamOf(s), node);
}

void EmulatedDevice::enqueueHostWork(DeviceStream s, std::function<void()> work) {
  enqueue(streamOf(s), std::move(work));
}

Result<bool> EmulatedDevice::capturing(DeviceStream s) { return streamOf(s).capturing.load(); }

Result<void*> EmulatedDevice::allocPinned(size_t bytes) {
  TUTTI_RETURN_IF_ERROR(notForked());
  bytes = (bytes + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, bytes);
  if (!p) return SystemError("emulated pinned allocation failed");
  useContext();
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.pinnedAllocations;
  mapped_.push_back(std::make_unique<HostRange>(HostRange{static_cast<char*>(p), bytes, true}));
  return p;
}

void EmulatedDevice::freePinned(void* p) {
  unregisterHost(p);  // waits as cudaFreeHost does
  std::free(p);
}

// As cudaHostRegister with UVA: the device address is the host address.
Result<void*> EmulatedDevice::registerHost(void* p, size_t bytes) {
  countMemoryCall();
  useContext();
  std::lock_guard<std::mutex> lock(mutex_);
  const char* c = static_cast<const char*>(p);
  for (auto& r : mapped_)
    if (c < r->base + r->bytes && r->base < c + bytes)
      return Status(Code::kCudaError, "emulated device: host memory registered twice");
  ++counters_.hostRegistrations;
  mapped_.push_back(std::make_unique<HostRange>(HostRange{c, bytes, false}));
  return p;
}

void EmulatedDevice::unregisterHost(void* p) {
  waitForQueuedGates("a host unregistration");
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < mapped_.size(); ++i)
    if (mapped_[i]->base == p) {
      mapped_.erase(mapped_.begin() + static_cast<long>(i));
      return;
    }
}

const EmulatedDevice::Allocation* EmulatedDevice::allocationOf(const void* p) const {
  const char* c = static_cast<const char*>(p);
  for (auto& a : allocations_)
    if (c >= a->address && c < a->address + a->size) return a.get();
  return nullptr;
}

EmulatedDevice::Place EmulatedDevice::placeOf(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (auto& a : allocations_)
    if (c >= a->address && c < a->address + a->size)
      return a->fd < 0 || a->device != tCurrentDevice ? Place::kPeer : Place::kOwn;
  for (auto& r : mapped_)
    if (c >= r->base && c + bytes <= r->base + r->bytes) return Place::kMappedHost;
  return Place::kPageableHost;
}

bool EmulatedDevice::pageable(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  return placeOf(p, bytes) == Place::kPageableHost;
}

Status EmulatedDevice::touch(std::initializer_list<std::pair<const void*, size_t>> operands, bool kernel,
                             const char* what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sticky_.ok()) return sticky_;
  bool peer = false, mapped = false;
  for (const auto& [p, bytes] : operands) {
    // A kernel reaches another device's allocation only once the current
    // device enabled peer access to it (IPC maps enable it as they open).
    const Allocation* a = allocationOf(p);
    if (kernel && a && a->fd >= 0 && a->device != tCurrentDevice &&
        !peerEnabled_.count({tCurrentDevice, a->device}))
      return Status(Code::kCudaError, std::string("emulated device: a ") + what + " kernel on device " +
                                          std::to_string(tCurrentDevice) + " reads device " + std::to_string(a->device) +
                                          "'s memory without peer access (cudaDeviceEnablePeerAccess)");
    switch (placeOf(p, bytes)) {
      case Place::kOwn: break;
      case Place::kPeer: peer = true; break;
      case Place::kMappedHost: mapped = true; break;
      case Place::kPageableHost:
        if (kernel)
          return Status(Code::kCudaError, std::string("emulated device: ") + what +
                                              " kernel given host memory that is not mapped into the device");
        break;
    }
  }
  if (peer) ++counters_.peerOps;
  if (mapped) ++counters_.mappedHostOps;
  if (!peer && !mapped) ++counters_.deviceOps;
  return Status::Ok();
}

Status EmulatedDevice::copyAsync(void* dst, const void* src, size_t bytes, DeviceStream s) {
  TUTTI_RETURN_IF_ERROR(touch({{dst, bytes}, {src, bytes}}, false, "copy"));
  useContext();
  char* d = static_cast<char*>(backing(dst));
  const char* from = static_cast<const char*>(backing(src));
  enqueue(streamOf(s), [=] { std::memmove(d, from, bytes); });
  return Status::Ok();
}

// A kernel's copy: a launch, held to what kernels may reach.
Status EmulatedDevice::copyKernelAsync(void* dst, const void* src, size_t bytes, DeviceStream s) {
  TUTTI_RETURN_IF_ERROR(loadOnFirstLaunch());
  TUTTI_RETURN_IF_ERROR(sameDevice(tCurrentDevice, s, "a kernel launched"));
  TUTTI_RETURN_IF_ERROR(touch({{dst, bytes}, {src, bytes}}, true, "copy kernel"));
  char* d = static_cast<char*>(backing(dst));
  const char* from = static_cast<const char*>(backing(src));
  enqueue(streamOf(s), [=] { std::memmove(d, from, bytes); });
  return Status::Ok();
}

void EmulatedDevice::countMemoryCall() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (gatesHolding_ > 0) ++counters_.memoryCallsWhileStreamHeld;
}

// CUDA synchronizes the device for frees (cudaFree, cudaFreeHost,
// cudaHostUnregister): they wait until every queued gate has passed. A gate
// whose call needs this thread never does: on a GPU a hang; here an abort
// that says so, after a while. (Whether allocations and registrations wait
// too is not documented; they are only counted, in memoryCallsWhileStreamHeld.)
void EmulatedDevice::waitForQueuedGates(const char* call) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(kGateWaitLimitSeconds);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (gatesPending_ == 0) return;
    }
    if (std::chrono::steady_clock::now() > limit) {
      int pending, holding;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        pending = gatesPending_;
        holding = gatesHolding_;
      }
      fprintf(stderr,
              "emulated device: %s waited %d s for the device to go idle while %d stream gate(s) were "
              "queued (%d reached): CUDA synchronizes the device for it, so on a GPU this is a deadlock "
              "when a gate's call needs this thread\n",
              call, kGateWaitLimitSeconds, pending, holding);
      void* frames[32];
      backtrace_symbols_fd(frames, backtrace(frames, 32), 2);  // who made the call
      abort();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void EmulatedDevice::free(void* p) {
  waitForQueuedGates("a device free");
  unmap(p);
}

void EmulatedDevice::freeDevice(void* p) {
  countMemoryCall();
  free(p);
}

Result<void*> EmulatedDevice::allocDevice(size_t bytes) {
  countMemoryCall();
  auto device = currentDevice();
  return alloc(bytes, *device);
}

Status EmulatedDevice::sticky() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sticky_;
}

// A kernel reading a T at an address that is no multiple of sizeof(T)
// faults on a GPU, and the error is sticky: every later call of the
// process fails with it.
Status EmulatedDevice::checkAligned(std::initializer_list<const void*> operands, size_t elemSize, const char* what) {
  for (const void* p : operands)
    if (reinterpret_cast<uintptr_t>(p) % elemSize != 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (sticky_.ok())
        sticky_ = Status(Code::kCudaError, std::string("emulated device: misaligned address in a ") + what +
                                               " kernel (an operand is not a multiple of " +
                                               std::to_string(elemSize) + " bytes); the context is unusable");
      return sticky_;
    }
  return Status::Ok();
}

Status EmulatedDevice::flushRemoteWrites() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.remoteWriteFlushes;
  return Status::Ok();
}

// Loading waits, as CUDA's does, for every stream of the device to go idle.
Status EmulatedDevice::loadKernels() {
  TUTTI_RETURN_IF_ERROR(notForked());
  useContext();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (kernelsLoaded_[tCurrentDevice]) return Status::Ok();
  }
  waitForQueuedGates("loading the kernels");
  std::lock_guard<std::mutex> lock(mutex_);
  kernelsLoaded_[tCurrentDevice] = 1;
  return Status::Ok();
}

// Loading waits for every stream of the device to go idle; a pending gate
// waits for the very call that launches, so on a GPU this never returns.
Status EmulatedDevice::loadOnFirstLaunch() {
  std::lock_guard<std::mutex> lock(mutex_);
  contexts_[tCurrentDevice] = 1;
  if (kernelsLoaded_[tCurrentDevice]) return Status::Ok();
  if (gatesPending_ > 0)
    return Status(Code::kCudaError,
                  "emulated device: a kernel's first launch on device " + std::to_string(tCurrentDevice) +
                      " while a stream gate is pending; CUDA loads the kernel then (lazy loading) and waits "
                      "for every stream to go idle, which the gate's stream never does");
  kernelsLoaded_[tCurrentDevice] = 1;
  return Status::Ok();
}

Status EmulatedDevice::reduceAsync(void* dst, const void* a, const void* b, size_t count, DataType dtype,
                                   RedOp op, int divisor, DeviceStream s) {
  const size_t bytes = count * dtypeSize(dtype);
  TUTTI_RETURN_IF_ERROR(loadOnFirstLaunch());
  TUTTI_RETURN_IF_ERROR(checkAligned({dst, a, b}, dtypeSize(dtype), "reduce"));
  TUTTI_RETURN_IF_ERROR(sameDevice(tCurrentDevice, s, "a kernel launched"));
  TUTTI_RETURN_IF_ERROR(touch({{dst, bytes}, {a, bytes}, {b, bytes}}, true, "reduce"));
  void* d = backing(dst);
  const void* x = backing(a);
  const void* y = backing(b);
  ReduceFn fn = bestReduceTable().reduce[static_cast<int>(dtype)][static_cast<int>(op)];
  enqueue(streamOf(s), [=] { fn(d, x, y, count, divisor); });
  return Status::Ok();
}

Status EmulatedDevice::divideAsync(void* dst, const void* src, size_t count, DataType dtype, int divisor,
                                   DeviceStream s) {
  const size_t bytes = count * dtypeSize(dtype);
  TUTTI_RETURN_IF_ERROR(loadOnFirstLaunch());
  TUTTI_RETURN_IF_ERROR(checkAligned({dst, src}, dtypeSize(dtype), "divide"));
  TUTTI_RETURN_IF_ERROR(sameDevice(tCurrentDevice, s, "a kernel launched"));
  TUTTI_RETURN_IF_ERROR(touch({{dst, bytes}, {src, bytes}}, true, "divide"));
  void* d = backing(dst);
  const void* x = backing(src);
  DivideFn fn = bestReduceTable().divide[static_cast<int>(dtype)];
  enqueue(streamOf(s), [=] { fn(d, x, count, divisor); });
  return Status::Ok();
}

Status EmulatedDevice::streamWaitEvent(DeviceStream s, DeviceEvent ev) {
  TUTTI_RETURN_IF_ERROR(sticky());
  auto* e = static_cast<Event*>(ev);
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    target = e->recorded;
  }
  enqueue(streamOf(s), [e, target] {
    std::unique_lock<std::mutex> lock(e->mutex);
    e->done.wait(lock, [e, target] { return e->reached >= target; });
  });
  return Status::Ok();
}

Status EmulatedDevice::launchWorker(void* queue, void* scratch, unsigned, bool, DeviceStream s) {
  TUTTI_RETURN_IF_ERROR(loadOnFirstLaunch());
  TUTTI_RETURN_IF_ERROR(sameDevice(tCurrentDevice, s, "a kernel launched"));
  TUTTI_RETURN_IF_ERROR(sticky());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (placeOf(queue, sizeof(OpQueueShared)) != Place::kMappedHost || placeOf(scratch, workerScratchBytes()) != Place::kOwn)
      return Status(Code::kCudaError, "emulated device: a worker kernel given a queue not mapped into the device "
                                      "or scratch not in its memory");
  }
  auto* q = static_cast<OpQueueShared*>(backing(queue));
  const int device = tCurrentDevice;
  enqueue(streamOf(s), [this, q, device] { runWorker(*q, device); });
  return Status::Ok();
}

// As the kernel: from where the last worker stopped, each op once posted,
// `done` after it; an op a GPU would fault on is refused (and the device
// keeps the error, as a context does).
void EmulatedDevice::runWorker(OpQueueShared& q, int device) {
  tCurrentDevice = device;
  uint64_t next = __atomic_load_n(&q.done, __ATOMIC_ACQUIRE);
  __atomic_store_n(&q.started, __atomic_load_n(&q.started, __ATOMIC_ACQUIRE) + 1, __ATOMIC_RELEASE);
  for (;;) {
    while (__atomic_load_n(&q.posted, __ATOMIC_ACQUIRE) <= next) {
      if (stopWorkers_) return;
      // Abandoned after the host's last post: that post is seen now, or none comes.
      if (__atomic_load_n(&q.abandoned, __ATOMIC_ACQUIRE) != 0 && __atomic_load_n(&q.posted, __ATOMIC_ACQUIRE) <= next)
        return;
      std::this_thread::sleep_for(std::chrono::microseconds(5));
    }
    const QueuedOp op = q.ops[next % kOpQueueSlots];
    const bool stop = static_cast<QueuedOpKind>(op.kind) == QueuedOpKind::kStop;
    if (!stop && !runQueued(op).ok() && __atomic_load_n(&q.failed, __ATOMIC_ACQUIRE) == 0)
      __atomic_store_n(&q.failed, next + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&q.done, ++next, __ATOMIC_RELEASE);
    if (stop) return;
  }
}

Status EmulatedDevice::runQueued(const QueuedOp& op) {
  const auto kind = static_cast<QueuedOpKind>(op.kind);
  if (kind == QueuedOpKind::kCopy) {
    TUTTI_RETURN_IF_ERROR(touch({{op.dst, op.count}, {op.a, op.count}}, true, "copy kernel"));
    if (op.count > 0 && op.dst != op.a) std::memmove(backing(op.dst), backing(op.a), op.count);
    return Status::Ok();
  }
  const auto dtype = static_cast<DataType>(op.dtype);
  const size_t bytes = op.count * dtypeSize(dtype);
  if (kind == QueuedOpKind::kDivide) {
    TUTTI_RETURN_IF_ERROR(checkAligned({op.dst, op.a}, dtypeSize(dtype), "divide"));
    TUTTI_RETURN_IF_ERROR(touch({{op.dst, bytes}, {op.a, bytes}}, true, "divide"));
    bestReduceTable().divide[op.dtype](backing(op.dst), backing(op.a), op.count, op.divisor);
    return Status::Ok();
  }
  TUTTI_RETURN_IF_ERROR(checkAligned({op.dst, op.a, op.b}, dtypeSize(dtype), "reduce"));
  TUTTI_RETURN_IF_ERROR(touch({{op.dst, bytes}, {op.a, bytes}, {op.b, bytes}}, true, "reduce"));
  bestReduceTable().reduce[op.dtype][op.op](backing(op.dst), backing(op.a), backing(op.b), op.count, op.divisor);
  return Status::Ok();
}

Result<int> EmulatedDevice::deviceByBusId(const std::string& busId) {
  for (int d = 0; d < devices_; ++d)
    if (busIds_[d] == busId) return d;
  return Status(Code::kCudaError, "emulated device: no device has bus id " + busId);
}

Status EmulatedDevice::enablePeerAccess(int peer) {
  if (!canAccessPeer(tCurrentDevice, peer))
    return Status(Code::kCudaError, "emulated device " + std::to_string(tCurrentDevice) +
                                        " cannot access device " + std::to_string(peer));
  useContext();
  std::lock_guard<std::mutex> lock(mutex_);
  peerEnabled_.insert({tCurrentDevice, peer});
  return Status::Ok();
}

Result<DeviceIpcHandle> EmulatedDevice::exportMemory(void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& a : allocations_)
    if (a->address == p && a->fd >= 0) {
      DeviceIpcHandle h;
      IpcPayload payload{static_cast<int32_t>(getpid()), a->fd, a->size};
      std::memcpy(h.bytes, &payload, sizeof(payload));
      return h;
    }
  return Status(Code::kCudaError, "emulated device: not the base of an allocation");
}

Result<void*> EmulatedDevice::openMemory(const DeviceIpcHandle& handle) {
  countMemoryCall();
  IpcPayload payload;
  std::memcpy(&payload, handle.bytes, sizeof(payload));
  if (payload.pid == getpid())  // as cudaIpcOpenMemHandle
    return Status(Code::kCudaError, "emulated device: IPC memory of this very process");
  {
    // As CUDA: a handle this process already opened gives the same pointer,
    // its count raised; each open needs its close.
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& a : allocations_)
      if (a->opens > 0 && a->sourcePid == payload.pid && a->sourceFd == payload.fd) {
        ++a->opens;
        return static_cast<void*>(a->address);
      }
  }
  useContext();
  const std::string path = "/proc/" + std::to_string(payload.pid) + "/fd/" + std::to_string(payload.fd);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status(Code::kCudaError, "emulated device: cannot open " + path);
  void* data = mmap(nullptr, payload.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (data == MAP_FAILED) return Status(Code::kCudaError, "emulated device: mmap of IPC memory failed");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.ipcOpens;
  }
  void* address = addAllocation(static_cast<char*>(data), payload.size, tCurrentDevice, -1);
  std::lock_guard<std::mutex> lock(mutex_);
  Allocation& a = *allocations_.back();
  a.sourcePid = payload.pid;
  a.sourceFd = payload.fd;
  a.opens = 1;
  return address;
}

void EmulatedDevice::closeMemory(void* p) {
  countMemoryCall();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& a : allocations_)
      if (a->address == p && --a->opens > 0) return;  // other opens still hold it
  }
  unmap(p);
}

}  // namespace tutti
