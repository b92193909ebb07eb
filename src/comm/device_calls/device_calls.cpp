#include "src/comm/device_calls/device_calls.h"

#include <algorithm>
#include <mutex>

namespace tutti {

namespace {

// A word for a communicator's stream gates, page-locked and mapped into
// every device. Words are never freed or reused: a caller's stream may reach
// a gate after its communicator is gone, and must then read the last ticket
// there, not memory handed back (a device fault that ends the context).
Result<uint32_t*> gateWord(DeviceRuntime& runtime) {
  static std::mutex mutex;
  static DeviceRuntime* owner = nullptr;  // tests install runtimes of their own
  static uint32_t* page = nullptr;
  static size_t used = 0;
  constexpr size_t kWordsPerPage = 4096 / sizeof(uint32_t);
  std::lock_guard<std::mutex> lock(mutex);
  if (owner != &runtime || used == kWordsPerPage) {
    TUTTI_ASSIGN_OR_RETURN(void* p, runtime.allocPinned(4096));
    owner = &runtime;
    page = static_cast<uint32_t*>(p);
    used = 0;
  }
  uint32_t* word = page + used++;
  __atomic_store_n(word, 0u, __ATOMIC_RELEASE);
  return word;
}

}  // namespace

Result<std::unique_ptr<DeviceCalls>> DeviceCalls::create(DeviceRuntime& runtime, int device,
                                                         const std::atomic<bool>* abort, double timeoutSeconds,
                                                         int sharers, bool leanWorker) {
  DeviceScope scope(runtime, device);
  TUTTI_RETURN_IF_ERROR(scope.status());
  TUTTI_RETURN_IF_ERROR(runtime.loadKernels());
  TUTTI_ASSIGN_OR_RETURN(uint32_t* word, gateWord(runtime));
  TUTTI_ASSIGN_OR_RETURN(DeviceStream stream, runtime.createStream());
  auto queue = OpQueue::create(runtime, stream, abort, timeoutSeconds, sharers, leanWorker);
  if (!queue.ok()) {
    runtime.destroyStream(stream);
    return queue.status();
  }
  return std::unique_ptr<DeviceCalls>(new DeviceCalls(runtime, device, stream, std::move(*queue), word));
}

DeviceCalls::~DeviceCalls() {
  (void)runtime_.synchronize(stream_);
  queue_.reset();
  if (scratch_) runtime_.freeDevice(scratch_);
  for (void* p : retired_) runtime_.freeDevice(p);
  for (DeviceEvent e : spareEvents_) runtime_.destroyEvent(e);
  runtime_.destroyStream(stream_);
}

Result<void*> DeviceCalls::scratch(size_t bytes) {
  if (scratchBytes_ >= bytes) return scratch_;
  DeviceScope scope(runtime_, device_);
  TUTTI_RETURN_IF_ERROR(scope.status());
  const size_t grown = std::max(bytes, 2 * scratchBytes_);
  TUTTI_ASSIGN_OR_RETURN(void* p, runtime_.allocDevice(grown));
  if (scratch_) retired_.push_back(scratch_);
  scratch_ = p;
  scratchBytes_ = grown;
  return scratch_;
}

Result<DeviceEvent> DeviceCalls::recordInputsReady(DeviceStream s) {
  DeviceEvent e = nullptr;
  {
    std::lock_guard<std::mutex> lock(eventsMutex_);
    if (!spareEvents_.empty()) {
      e = spareEvents_.back();
      spareEvents_.pop_back();
    }
  }
  if (!e) {
    TUTTI_ASSIGN_OR_RETURN(e, runtime_.createEvent());
  }
  Status st = runtime_.recordInto(e, s);
  if (!st.ok()) {
    giveBack(e);
    return st;
  }
  return e;
}

void DeviceCalls::giveBack(DeviceEvent e) {
  std::lock_guard<std::mutex> lock(eventsMutex_);
  spareEvents_.push_back(e);
}

Status DeviceCalls::drain() {
  Status posting = reducer_.takeError();
  Status done = queue_->drain();
  return posting.ok() ? done : posting;
}

}  // namespace tutti
