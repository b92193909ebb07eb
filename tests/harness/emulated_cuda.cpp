#include "tests/harness/emulated_cuda.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tutti_test {

using tutti::DeviceEvent;
using tutti::DeviceStream;
using tutti::Status;

namespace {

thread_local cudaError_t tLastError = cudaSuccess;
thread_local cudaStreamCaptureMode tMode = cudaStreamCaptureModeGlobal;
thread_local bool tInHostFunction = false;

struct Capture {
  cudaStreamCaptureMode mode;
  std::thread::id owner;
  bool invalidated = false;
};

struct Graph {
  FakeDevice::Graph nodes;
};

struct Done {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
};

struct HostCall {
  cudaHostFn_t fn;
  void* data;
  std::shared_ptr<Done> done;
};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct EmulatedCuda::State {
  explicit State(FakeDevice& d) : dev(d) {}
  FakeDevice& dev;
  std::mutex mutex;
  std::map<cudaStream_t, Capture> captures;
  std::shared_timed_mutex pageableCopy;  // held alone by a copy of pageable memory while it waits
  std::shared_timed_mutex legacyPageableCopy;  // the same, by such a copy on the legacy stream
  // The one thread that runs host functions, and its queue of ready ones.
  std::mutex hostMutex;
  std::condition_variable hostReady;
  std::vector<HostCall> ready;
  std::minstd_rand order{20261126};
  bool stop = false;
  std::atomic<int64_t> runningSinceNs{0};  // 0: no host function runs
  std::atomic<double> limitSeconds{30};
  std::atomic<int> hostFunctionsRun{0};
  std::thread runner;
  std::thread watchdog;
};

namespace {

EmulatedCuda::State* gState = nullptr;

EmulatedCuda::State& S() {
  if (!gState) throw std::logic_error("emulated CUDA used without an EmulatedCuda");
  return *gState;
}

// As CUDA: an error is the call's result and the thread's last error.
cudaError_t fail(cudaError_t e) {
  tLastError = e;
  return e;
}

cudaError_t from(const Status& st, cudaError_t otherwise) {
  if (st.ok()) return cudaSuccess;
  if (S().dev.forked()) return fail(cudaErrorInitializationError);
  if (!S().dev.stickyError().ok()) return fail(cudaErrorMisalignedAddress);
  return fail(otherwise);
}

// Whether a potentially unsafe call may run now; it invalidates the
// captures that forbid it (CUDA's cudaStreamCaptureModeGlobal rules).
bool unsafeAllowed() {
  if (tMode == cudaStreamCaptureModeRelaxed) return true;
  std::lock_guard<std::mutex> lock(S().mutex);
  bool allowed = true;
  for (auto& [stream, c] : S().captures) {
    if (c.invalidated) continue;
    const bool mine = c.owner == std::this_thread::get_id();
    if ((mine && c.mode != cudaStreamCaptureModeRelaxed) ||
        (!mine && c.mode == cudaStreamCaptureModeGlobal && tMode == cudaStreamCaptureModeGlobal)) {
      c.invalidated = true;
      allowed = false;
    }
  }
  return allowed;
}

// What every call checks first.
cudaError_t enter(bool unsafe) {
  if (tInHostFunction) return fail(cudaErrorNotPermitted);  // host functions may not call CUDA
  if (S().dev.forked()) return fail(cudaErrorInitializationError);
  if (!S().dev.stickyError().ok()) return fail(cudaErrorMisalignedAddress);
  if (unsafe && !unsafeAllowed()) return fail(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;
}

#define ENTER(unsafe)                           \
  do {                                          \
    cudaError_t entered_ = enter(unsafe);       \
    if (entered_ != cudaSuccess) return entered_; \
  } while (0)

bool isCapturing(cudaStream_t s) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().captures.count(s) > 0;
}

void invalidate(cudaStream_t s) {
  std::lock_guard<std::mutex> lock(S().mutex);
  auto it = S().captures.find(s);
  if (it != S().captures.end()) it->second.invalidated = true;
}

// A made thing handed to the caller's pointer, or the failure as CUDA's code.
template <typename T, typename Out>
cudaError_t handOut(tutti::Result<T> made, Out* out, cudaError_t otherwise) {
  if (!made.ok()) return from(made.status(), otherwise);
  *out = static_cast<Out>(*made);
  return cudaSuccess;
}

DeviceStream ds(cudaStream_t s) { return static_cast<DeviceStream>(s); }
DeviceEvent de(cudaEvent_t e) { return static_cast<DeviceEvent>(e); }

bool driverPresent() { return true; }

cudaError_t getDeviceCount(int* n) {
  ENTER(false);
  *n = S().dev.deviceCount();
  return cudaSuccess;
}

cudaError_t getDevice(int* d) {
  ENTER(false);
  *d = *S().dev.currentDevice();
  return cudaSuccess;
}

cudaError_t setDevice(int d) {
  ENTER(false);
  return from(S().dev.setDevice(d), cudaErrorInvalidDevice);
}

cudaError_t deviceGetPCIBusId(char* id, int len, int d) {
  ENTER(false);
  auto bus = S().dev.pciBusId(d);
  if (!bus.ok()) return fail(cudaErrorInvalidDevice);
  snprintf(id, static_cast<size_t>(len), "%s", bus->c_str());
  return cudaSuccess;
}

cudaError_t deviceGetByPCIBusId(int* d, const char* id) {
  ENTER(false);
  auto found = S().dev.deviceByBusId(id);
  if (!found.ok()) return fail(cudaErrorInvalidDevice);
  *d = *found;
  return cudaSuccess;
}

cudaError_t deviceCanAccessPeer(int* can, int d, int peer) {
  ENTER(false);
  *can = S().dev.canAccessPeer(d, peer) ? 1 : 0;
  return cudaSuccess;
}

cudaError_t deviceEnablePeerAccess(int peer, unsigned int) {
  ENTER(false);
  return from(S().dev.enablePeerAccess(peer), cudaErrorPeerAccessUnsupported);
}

cudaError_t getLastError() {
  if (!S().dev.stickyError().ok()) return cudaErrorMisalignedAddress;  // sticky: never cleared
  cudaError_t e = tLastError;
  tLastError = cudaSuccess;
  return e;
}

cudaError_t threadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  std::swap(tMode, *mode);
  return cudaSuccess;
}

cudaError_t primaryContextActive(int d, int* active) {
  *active = S().dev.contextActive(d) ? 1 : 0;
  return cudaSuccess;
}

cudaError_t pointerOnDevice(const void* p, int* onDevice, int* device) {
  tutti::PointerInfo info = S().dev.pointerInfo(p);
  *onDevice = info.onDevice ? 1 : 0;
  *device = info.device;
  return cudaSuccess;
}

CUresult streamWaitValue32(CUstream s, CUdeviceptr word, cuuint32_t value, unsigned int) {
  if (enter(false) != cudaSuccess) return CUDA_ERROR_INVALID_VALUE;
  Status st = S().dev.waitWordAsync(static_cast<DeviceStream>(s), reinterpret_cast<const uint32_t*>(word), value);
  return st.ok() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

cudaError_t streamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  ENTER(false);
  FakeDevice& d = S().dev;
  return handOut(flags & cudaStreamNonBlocking ? d.createStream() : d.createBlockingStream(), s, cudaErrorUnknown);
}

cudaError_t streamDestroy(cudaStream_t s) {
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    S().captures.erase(s);
  }
  S().dev.destroyStream(ds(s));
  return cudaSuccess;
}

cudaError_t streamSynchronize(cudaStream_t s) {
  ENTER(true);
  if (isCapturing(s)) {
    invalidate(s);
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  return from(S().dev.synchronize(ds(s)), cudaErrorLaunchFailure);
}

cudaError_t streamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  std::lock_guard<std::mutex> lock(S().mutex);
  auto it = S().captures.find(s);
  *status = it == S().captures.end() ? cudaStreamCaptureStatusNone
            : it->second.invalidated ? cudaStreamCaptureStatusInvalidated
                                     : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

// A copy to or from pageable memory returns once it is done, and while it
// waits for its stream, another thread's cudaEventCreate or cudaEventDestroy
// does not return, nor, when the copy is on the legacy stream, a kernel
// launch, a copy or an event's record (the driver's lock: hung ranks' stacks on an H200,
// bench/results/gpu.md); records and queries go on, and copies when the
// pageable one is on a stream of its own.
// CudaRules.WhatWaitsWhileAThreadCopiesPageableMemory checks it on a GPU.
constexpr int kCopyWaitLimitSeconds = 30;

// The wait of a call that a pageable copy holds up: on a GPU it has no end
// when the copy waits for a gate that the caller must open; here an abort
// that says so.
void waitForPageableCopies(const char* call, std::shared_timed_mutex& copies = S().pageableCopy) {
  std::shared_lock<std::shared_timed_mutex> others(copies, std::defer_lock);
  if (others.try_lock_for(std::chrono::seconds(kCopyWaitLimitSeconds))) return;
  fprintf(stderr,
          "emulated CUDA: %s waited %d s for another thread's copy to pageable memory, which waits "
          "behind a stream: on a GPU a deadlock when that stream's gate needs this thread\n",
          call, kCopyWaitLimitSeconds);
  abort();
}

cudaError_t eventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  ENTER(false);
  waitForPageableCopies("cudaEventCreate");
  return handOut(S().dev.createEvent(), e, cudaErrorUnknown);
}

cudaError_t eventRecord(cudaEvent_t e, cudaStream_t s) {
  ENTER(false);
  // Like a launch, it waits while a pageable copy waits on the legacy stream.
  waitForPageableCopies("cudaEventRecord", S().legacyPageableCopy);
  return from(S().dev.recordInto(de(e), ds(s)), cudaErrorInvalidResourceHandle);
}

cudaError_t eventQuery(cudaEvent_t e) {
  ENTER(true);
  if (S().dev.eventCaptured(de(e))) return fail(cudaErrorStreamCaptureUnsupported);
  auto done = S().dev.eventDone(de(e));
  if (!done.ok()) return from(done.status(), cudaErrorLaunchFailure);
  // "Not ready" is an answer, not an error: CUDA 13 leaves no last error
  // for it (seen on an H200, tests/device/cuda_rules_test.cpp).
  return *done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t eventSynchronize(cudaEvent_t e) {
  ENTER(true);
  if (S().dev.eventCaptured(de(e))) return fail(cudaErrorStreamCaptureUnsupported);
  return from(S().dev.waitEvent(de(e)), cudaErrorLaunchFailure);
}

cudaError_t streamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  ENTER(false);
  return from(S().dev.streamWaitEvent(ds(s), de(e)), cudaErrorInvalidResourceHandle);
}

cudaError_t eventDestroy(cudaEvent_t e) {
  waitForPageableCopies("cudaEventDestroy");
  S().dev.destroyEvent(de(e));
  return cudaSuccess;
}

cudaError_t hostAlloc(void** p, size_t bytes, unsigned int) {
  ENTER(true);
  return handOut(S().dev.allocPinned(bytes), p, cudaErrorMemoryAllocation);
}

cudaError_t freeHost(void* p) {
  ENTER(true);
  S().dev.freePinned(p);
  return cudaSuccess;
}

cudaError_t hostRegister(void* p, size_t bytes, unsigned int) {
  ENTER(true);
  return from(S().dev.registerHost(p, bytes).status(), cudaErrorHostMemoryAlreadyRegistered);
}

cudaError_t hostUnregister(void* p) {
  ENTER(true);
  S().dev.unregisterHost(p);
  return cudaSuccess;
}

// Unified addressing: mapped host memory has the same address on the device.
cudaError_t hostGetDevicePointer(void** d, void* p, unsigned int) {
  ENTER(false);
  *d = p;
  return cudaSuccess;
}

cudaError_t deviceMalloc(void** p, size_t bytes) {
  ENTER(true);
  return handOut(S().dev.allocDevice(bytes), p, cudaErrorMemoryAllocation);
}

cudaError_t deviceFree(void* p) {
  ENTER(true);
  S().dev.freeDevice(p);
  return cudaSuccess;
}

cudaError_t memcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t s) {
  ENTER(false);
  FakeDevice& d = S().dev;
  if (!d.pageable(dst, bytes) && !d.pageable(src, bytes)) {
    // While another thread's pageable copy waits on the legacy stream, this
    // copy waits too (an H200, 2026-11-27), as a kernel launch does.
    waitForPageableCopies("cudaMemcpyAsync", S().legacyPageableCopy);
    return from(d.copyAsync(dst, src, bytes, ds(s)), cudaErrorInvalidValue);
  }
  std::unique_lock<std::shared_timed_mutex> staging(S().pageableCopy);
  std::unique_lock<std::shared_timed_mutex> onLegacy(S().legacyPageableCopy, std::defer_lock);
  if (s == nullptr) onLegacy.lock();
  if (cudaError_t e = from(d.copyAsync(dst, src, bytes, ds(s)), cudaErrorInvalidValue)) return e;
  auto copied = d.recordEvent(ds(s));
  if (!copied.ok()) return from(copied.status(), cudaErrorUnknown);
  Status st = d.waitEvent(*copied);
  d.destroyEvent(*copied);
  return from(st, cudaErrorLaunchFailure);
}

cudaError_t deviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTarget, cudaFlushGPUDirectRDMAWritesScope) {
  ENTER(false);
  return from(S().dev.flushRemoteWrites(), cudaErrorUnknown);
}

cudaError_t ipcGetMemHandle(cudaIpcMemHandle_t* h, void* p) {
  ENTER(false);
  auto handle = S().dev.exportMemory(p);
  if (!handle.ok()) return from(handle.status(), cudaErrorInvalidValue);
  std::memcpy(h, handle->bytes, sizeof(*h));
  return cudaSuccess;
}

cudaError_t ipcOpenMemHandle(void** p, cudaIpcMemHandle_t h, unsigned int) {
  ENTER(true);
  tutti::DeviceIpcHandle handle;
  std::memcpy(handle.bytes, &h, sizeof(h));
  return handOut(S().dev.openMemory(handle), p, cudaErrorInvalidResourceHandle);
}

cudaError_t ipcCloseMemHandle(void* p) {
  ENTER(true);
  S().dev.closeMemory(p);
  return cudaSuccess;
}

cudaError_t streamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  ENTER(false);
  if (!s) return fail(cudaErrorStreamCaptureUnsupported);  // the legacy stream cannot be captured
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    if (S().captures.count(s)) return fail(cudaErrorIllegalState);
    S().captures[s] = Capture{mode, std::this_thread::get_id()};
  }
  S().dev.beginCapture(ds(s));
  return cudaSuccess;
}

cudaError_t streamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  bool invalidated;
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    auto it = S().captures.find(s);
    if (it == S().captures.end()) return fail(cudaErrorIllegalState);
    if (it->second.mode != cudaStreamCaptureModeRelaxed && it->second.owner != std::this_thread::get_id())
      return fail(cudaErrorStreamCaptureWrongThread);
    invalidated = it->second.invalidated;
    S().captures.erase(it);
  }
  FakeDevice::Graph nodes = S().dev.endCapture(ds(s));
  *graph = nullptr;
  if (invalidated) return fail(cudaErrorStreamCaptureInvalidated);
  *graph = reinterpret_cast<cudaGraph_t>(new Graph{std::move(nodes)});
  return cudaSuccess;
}

cudaError_t graphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  ENTER(false);
  *exec = reinterpret_cast<cudaGraphExec_t>(new Graph(*reinterpret_cast<Graph*>(graph)));
  return cudaSuccess;
}

cudaError_t graphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  ENTER(false);
  S().dev.replay(reinterpret_cast<Graph*>(exec)->nodes, ds(s));
  return cudaSuccess;
}

cudaError_t graphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<Graph*>(exec);
  return cudaSuccess;
}

cudaError_t graphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<Graph*>(graph);
  return cudaSuccess;
}

// The stream waits while the process's one callback thread runs the
// function (recorded as a node, and run again on every replay, when the
// stream is being captured).
cudaError_t launchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  ENTER(false);
  EmulatedCuda::State* st = &S();
  S().dev.enqueueHostWork(ds(s), [st, fn, data] {
    auto done = std::make_shared<Done>();
    {
      std::lock_guard<std::mutex> lock(st->hostMutex);
      st->ready.push_back({fn, data, done});
    }
    st->hostReady.notify_all();
    std::unique_lock<std::mutex> lock(done->mutex);
    done->cv.wait(lock, [&] { return done->done; });
  });
  return cudaSuccess;
}

// A launch wrapper ends in cudaGetLastError: it returns (and clears)
// whatever error the thread had, the launch's own or one left before it.
int launch(const std::function<Status()>& kernel) {
  if (enter(false) == cudaSuccess) {
    waitForPageableCopies("a kernel launch", S().legacyPageableCopy);
    (void)from(kernel(), cudaErrorLaunchFailure);
  }
  return getLastError();
}

int launchReduce(void* dst, const void* a, const void* b, size_t count, tutti::DataType dtype, tutti::RedOp op,
                 int divisor, void* s) {
  return launch([&] { return S().dev.reduceAsync(dst, a, b, count, dtype, op, divisor, s); });
}

int launchDivide(void* dst, const void* src, size_t count, tutti::DataType dtype, int divisor, void* s) {
  return launch([&] { return S().dev.divideAsync(dst, src, count, dtype, divisor, s); });
}

int launchCopy(void* dst, const void* src, size_t bytes, void* s) {
  return launch([&] { return S().dev.copyKernelAsync(dst, src, bytes, s); });
}

int loadKernels() {
  return launch([] { return S().dev.loadKernels(); });
}

int launchWorker(void* queue, void* scratch, unsigned blocks, bool lean, void* s) {
  return launch([&] { return S().dev.launchWorker(queue, scratch, blocks, lean, s); });
}

int workerBlocks(int) { return 2; }
size_t workerScratchBytes() { return sizeof(uint64_t); }

void runHostFunctions(EmulatedCuda::State* st) {
  tInHostFunction = true;
  for (;;) {
    HostCall call;
    {
      std::unique_lock<std::mutex> lock(st->hostMutex);
      st->hostReady.wait(lock, [&] { return st->stop || !st->ready.empty(); });
      if (st->ready.empty()) return;
      // Any ready one: CUDA promises no order between streams.
      const size_t pick = st->order() % st->ready.size();
      call = st->ready[pick];
      st->ready.erase(st->ready.begin() + static_cast<long>(pick));
      st->runningSinceNs = nowNs();
    }
    call.fn(call.data);
    st->runningSinceNs = 0;
    ++st->hostFunctionsRun;
    std::lock_guard<std::mutex> lock(call.done->mutex);
    call.done->done = true;
    call.done->cv.notify_all();
  }
}

// A host function that waits for another waits forever on a GPU: the one
// thread that would run the other is the one waiting.
void watchHostFunctions(EmulatedCuda::State* st) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(st->hostMutex);
      if (st->hostReady.wait_for(lock, std::chrono::milliseconds(50), [&] { return st->stop; })) return;
      const int64_t since = st->runningSinceNs;
      if (since != 0 && !st->ready.empty() && nowNs() - since > st->limitSeconds * 1e9) {
        fprintf(stderr,
                "emulated CUDA: a host function has run for %.1f s while %zu other(s) wait: CUDA runs a process's "
                "host functions on one thread, so a host function that waits for other CUDA work (another host "
                "function, a stream, an event) deadlocks on a GPU\n",
                (nowNs() - since) / 1e9, st->ready.size());
        abort();
      }
    }
  }
}

}  // namespace

EmulatedCuda::EmulatedCuda(FakeDevice& device) : state_(new State(device)) {
  if (gState) throw std::logic_error("one EmulatedCuda at a time");
  gState = state_;
  state_->runner = std::thread(runHostFunctions, state_);
  state_->watchdog = std::thread(watchHostFunctions, state_);
}

EmulatedCuda::~EmulatedCuda() {
  {
    std::lock_guard<std::mutex> lock(state_->hostMutex);
    state_->stop = true;
  }
  state_->hostReady.notify_all();
  state_->runner.join();
  state_->watchdog.join();
  gState = nullptr;
  delete state_;
}

void EmulatedCuda::setHostFunctionLimit(double seconds) { state_->limitSeconds = seconds; }

int EmulatedCuda::hostFunctionsRun() const { return state_->hostFunctionsRun; }

const tutti::CudaApi& EmulatedCuda::api() {
  static const tutti::CudaApi table = [] {
    tutti::CudaApi a{};
    a.driverPresent = driverPresent;
    a.getDeviceCount = getDeviceCount;
    a.getDevice = getDevice;
    a.setDevice = setDevice;
    a.deviceGetPCIBusId = deviceGetPCIBusId;
    a.deviceGetByPCIBusId = deviceGetByPCIBusId;
    a.deviceCanAccessPeer = deviceCanAccessPeer;
    a.deviceEnablePeerAccess = deviceEnablePeerAccess;
    a.getLastError = getLastError;
    a.threadExchangeStreamCaptureMode = threadExchangeStreamCaptureMode;
    a.primaryContextActive = primaryContextActive;
    a.pointerOnDevice = pointerOnDevice;
    a.streamWaitValue32 = streamWaitValue32;
    a.streamCreateWithFlags = streamCreateWithFlags;
    a.streamDestroy = streamDestroy;
    a.streamSynchronize = streamSynchronize;
    a.streamIsCapturing = streamIsCapturing;
    a.eventCreateWithFlags = eventCreateWithFlags;
    a.eventRecord = eventRecord;
    a.eventQuery = eventQuery;
    a.eventSynchronize = eventSynchronize;
    a.streamWaitEvent = streamWaitEvent;
    a.eventDestroy = eventDestroy;
    a.hostAlloc = hostAlloc;
    a.freeHost = freeHost;
    a.hostRegister = hostRegister;
    a.hostUnregister = hostUnregister;
    a.hostGetDevicePointer = hostGetDevicePointer;
    a.malloc = deviceMalloc;
    a.free = deviceFree;
    a.memcpyAsync = memcpyAsync;
    a.deviceFlushGPUDirectRDMAWrites = deviceFlushGPUDirectRDMAWrites;
    a.ipcGetMemHandle = ipcGetMemHandle;
    a.ipcOpenMemHandle = ipcOpenMemHandle;
    a.ipcCloseMemHandle = ipcCloseMemHandle;
    a.streamBeginCapture = streamBeginCapture;
    a.streamEndCapture = streamEndCapture;
    a.graphInstantiate = graphInstantiate;
    a.graphLaunch = graphLaunch;
    a.graphExecDestroy = graphExecDestroy;
    a.graphDestroy = graphDestroy;
    a.launchHostFunc = launchHostFunc;
    a.launchReduce = launchReduce;
    a.launchDivide = launchDivide;
    a.launchCopy = launchCopy;
    a.loadKernels = loadKernels;
    a.launchWorker = launchWorker;
    a.workerBlocks = workerBlocks;
    a.workerScratchBytes = workerScratchBytes;
    return a;
  }();
  return table;
}

}  // namespace tutti_test
