// DeviceRuntime over the CUDA runtime (linked statically, as NCCL does: the
// only thing needed at run time is the driver, and without one every call
// says so instead of failing to load). Every CUDA call goes through a
// CudaApi table (cuda_api.h), so tests can run this adapter over an
// emulation that keeps CUDA's rules.
#include <cctype>
#include <cstring>
#include <mutex>

#include "src/device/cuda_api.h"
#include "src/device/device_runtime.h"

namespace tutti {

namespace {

// `what` is the failed call as written here ("cu_.malloc(&p, bytes)"):
// messages name it as CUDA does ("cudaMalloc").
Status cudaFailure(cudaError_t e, const char* what) {
  std::string call(what);
  if (call.rfind("cu_.", 0) == 0) {
    call = call.substr(4, call.find('(') - 4);
    call = "cuda" + std::string(1, static_cast<char>(toupper(call[0]))) + call.substr(1);
  }
  return Status(Code::kCudaError, call + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// Inside CudaRuntime: a failed call is reported once, here, and taken off
// the thread's last error, which the next kernel launch would report again.
#define TUTTI_CUDA_CHECK(call)                                   \
  do {                                                           \
    cudaError_t tutti_e_ = (call);                               \
    if (tutti_e_ != cudaSuccess) return failed(tutti_e_, #call); \
  } while (0)

// Another thread may be capturing a CUDA graph in global mode, in which CUDA
// refuses "potentially unsafe" calls (allocations, frees, registrations,
// event and stream waits) from every thread and invalidates that capture.
// tutti's own calls are never part of a capture: they run with the calling
// thread's mode relaxed, and the caller's mode is put back after.
class RelaxedCapture {
 public:
  explicit RelaxedCapture(const CudaApi& api) : api_(api) { api_.threadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { api_.threadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  const CudaApi& api_;
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  explicit CudaRuntime(const CudaApi& api) : cu_(api) {}
  const char* name() const override { return "CUDA"; }

  int deviceCount() override {
    probe();
    return count_;
  }
  std::string unavailableReason() override {
    probe();
    return reason_;
  }

  Result<int> currentDevice() override {
    int d = -1;
    TUTTI_CUDA_CHECK(cu_.getDevice(&d));
    return d;
  }
  Status setDevice(int device) override {
    TUTTI_CUDA_CHECK(cu_.setDevice(device));
    return Status::Ok();
  }
  Result<std::string> pciBusId(int device) override {
    char id[32] = {0};
    TUTTI_CUDA_CHECK(cu_.deviceGetPCIBusId(id, sizeof(id), device));
    return std::string(id);
  }

  PointerInfo pointerInfo(const void* p) override {
    PointerInfo info;
    if (!p || deviceCount() == 0) return info;
    int onDevice = 0, device = -1;
    if (cu_.pointerOnDevice(p, &onDevice, &device) != cudaSuccess) return info;
    info.onDevice = onDevice != 0;
    info.device = device;
    return info;
  }
  bool contextActive(int device) override {
    int active = 0;
    return cu_.primaryContextActive(device, &active) == cudaSuccess && active != 0;
  }

  Result<DeviceStream> createStream() override {
    RelaxedCapture relaxed(cu_);
    cudaStream_t s = nullptr;
    // Non-blocking: tutti's copies must not wait for the legacy default
    // stream, which the user's gate may be holding.
    TUTTI_CUDA_CHECK(cu_.streamCreateWithFlags(&s, cudaStreamNonBlocking));
    return static_cast<DeviceStream>(s);
  }
  void destroyStream(DeviceStream s) override { cu_.streamDestroy(static_cast<cudaStream_t>(s)); }

  Status waitEvent(DeviceEvent e) override {
    RelaxedCapture relaxed(cu_);
    TUTTI_CUDA_CHECK(cu_.eventSynchronize(static_cast<cudaEvent_t>(e)));
    return Status::Ok();
  }
  void destroyEvent(DeviceEvent e) override { cu_.eventDestroy(static_cast<cudaEvent_t>(e)); }
  Status synchronize(DeviceStream s) override {
    RelaxedCapture relaxed(cu_);
    TUTTI_CUDA_CHECK(cu_.streamSynchronize(static_cast<cudaStream_t>(s)));
    return Status::Ok();
  }
  Status waitWordAsync(DeviceStream s, const uint32_t* word, uint32_t value) override {
    if (!cu_.streamWaitValue32)
      return Status(Code::kCudaError, "the CUDA driver has no cuStreamWaitValue32, which stream gates need");
    void* d = nullptr;
    TUTTI_CUDA_CHECK(cu_.hostGetDevicePointer(&d, const_cast<uint32_t*>(word), 0));
    CUresult r = cu_.streamWaitValue32(static_cast<CUstream>(s), reinterpret_cast<CUdeviceptr>(d), value,
                                       CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_ERROR_NOT_SUPPORTED)
      return Status(Code::kCudaError, "the CUDA driver has no cuStreamWaitValue32, which stream gates need");
    if (r != CUDA_SUCCESS)
      return Status(Code::kCudaError, "cuStreamWaitValue32: CUresult " + std::to_string(r));
    return Status::Ok();
  }
  Result<bool> capturing(DeviceStream s) override {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    TUTTI_CUDA_CHECK(cu_.streamIsCapturing(static_cast<cudaStream_t>(s), &status));
    return status != cudaStreamCaptureStatusNone;
  }

  Result<void*> allocPinned(size_t bytes) override {
    RelaxedCapture relaxed(cu_);
    void* p = nullptr;
    TUTTI_CUDA_CHECK(cu_.hostAlloc(&p, bytes, cudaHostAllocPortable));
    return p;
  }
  void freePinned(void* p) override {
    RelaxedCapture relaxed(cu_);
    cu_.freeHost(p);
  }
  Result<void*> registerHost(void* p, size_t bytes) override {
    RelaxedCapture relaxed(cu_);
    TUTTI_CUDA_CHECK(cu_.hostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable));
    void* d = nullptr;
    cudaError_t e = cu_.hostGetDevicePointer(&d, p, 0);
    if (e != cudaSuccess) {
      cu_.hostUnregister(p);
      return failed(e, "cudaHostGetDevicePointer");
    }
    return d;
  }
  void unregisterHost(void* p) override {
    RelaxedCapture relaxed(cu_);
    cu_.hostUnregister(p);
  }

  Status copyAsync(void* dst, const void* src, size_t bytes, DeviceStream s) override {
    TUTTI_CUDA_CHECK(cu_.memcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(s)));
    return Status::Ok();
  }
  Result<DeviceEvent> createEvent() override {
    cudaEvent_t e = nullptr;
    TUTTI_CUDA_CHECK(cu_.eventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync));
    return static_cast<DeviceEvent>(e);
  }
  Status recordInto(DeviceEvent e, DeviceStream s) override {
    TUTTI_CUDA_CHECK(cu_.eventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)));
    return Status::Ok();
  }
  Result<bool> eventDone(DeviceEvent e) override {
    RelaxedCapture relaxed(cu_);
    cudaError_t r = cu_.eventQuery(static_cast<cudaEvent_t>(e));
    if (r == cudaErrorNotReady) {
      // Taken off in case a runtime leaves "not ready" as the last error,
      // which the next launch would report as its own failure (CUDA 13
      // does not: tests/device/cuda_rules_test.cpp).
      (void)cu_.getLastError();
      return false;
    }
    TUTTI_CUDA_CHECK(r);
    return true;
  }

  Result<void*> allocDevice(size_t bytes) override {
    RelaxedCapture relaxed(cu_);
    void* p = nullptr;
    TUTTI_CUDA_CHECK(cu_.malloc(&p, bytes));
    return p;
  }
  void freeDevice(void* p) override {
    RelaxedCapture relaxed(cu_);
    cu_.free(p);
  }
  Status flushRemoteWrites() override {
    TUTTI_CUDA_CHECK(cu_.deviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                                                        cudaFlushGPUDirectRDMAWritesToOwner));
    return Status::Ok();
  }
  Status streamWaitEvent(DeviceStream s, DeviceEvent e) override {
    TUTTI_CUDA_CHECK(cu_.streamWaitEvent(static_cast<cudaStream_t>(s), static_cast<cudaEvent_t>(e), 0));
    return Status::Ok();
  }
  Status launchWorker(void* queue, void* scratch, unsigned blocks, bool lean, DeviceStream s) override {
    return launched(cu_.launchWorker(queue, scratch, blocks, lean, s), "the worker kernel's launch");
  }
  size_t workerScratchBytes() override { return cu_.workerScratchBytes(); }
  unsigned workerBlocks(int sharers) override { return static_cast<unsigned>(cu_.workerBlocks(sharers)); }
  Status loadKernels() override {
    return launched(cu_.loadKernels(), "loading tutti's kernels");
  }
  Status reduceAsync(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
                     int divisor, DeviceStream s) override {
    return launched(cu_.launchReduce(dst, a, b, count, dtype, op, divisor, s), "the reduce kernel's launch");
  }

  Result<int> deviceByBusId(const std::string& busId) override {
    int d = -1;
    TUTTI_CUDA_CHECK(cu_.deviceGetByPCIBusId(&d, busId.c_str()));
    return d;
  }
  bool canAccessPeer(int device, int peer) override {
    if (device == peer) return true;
    int can = 0;
    if (cu_.deviceCanAccessPeer(&can, device, peer) != cudaSuccess) {
      (void)cu_.getLastError();
      return false;
    }
    return can != 0;
  }
  Status enablePeerAccess(int peer) override {
    int self = -1;
    TUTTI_CUDA_CHECK(cu_.getDevice(&self));
    if (self == peer) return Status::Ok();
    cudaError_t r = cu_.deviceEnablePeerAccess(peer, 0);
    if (r == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cu_.getLastError();
      return Status::Ok();
    }
    TUTTI_CUDA_CHECK(r);
    return Status::Ok();
  }
  Result<DeviceIpcHandle> exportMemory(void* p) override {
    cudaIpcMemHandle_t h;
    TUTTI_CUDA_CHECK(cu_.ipcGetMemHandle(&h, p));
    static_assert(sizeof(h) <= sizeof(DeviceIpcHandle::bytes), "cudaIpcMemHandle_t grew");
    DeviceIpcHandle out;
    std::memcpy(out.bytes, &h, sizeof(h));
    return out;
  }
  Result<void*> openMemory(const DeviceIpcHandle& handle) override {
    RelaxedCapture relaxed(cu_);
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle.bytes, sizeof(h));
    void* p = nullptr;
    TUTTI_CUDA_CHECK(cu_.ipcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
    return p;
  }
  void closeMemory(void* p) override {
    RelaxedCapture relaxed(cu_);
    cu_.ipcCloseMemHandle(p);
  }

 private:
  Status failed(cudaError_t e, const char* what) {
    (void)cu_.getLastError();
    return cudaFailure(e, what);
  }
  Status launched(int error, const char* what) {
    const auto e = static_cast<cudaError_t>(error);  // the launch took it off the last error
    return e == cudaSuccess ? Status::Ok() : cudaFailure(e, what);
  }

  // Asked once: without a driver every answer is the same.
  void probe() {
    std::call_once(probed_, [this] {
      if (!cu_.driverPresent()) {
        reason_ = "no NVIDIA device node (/dev/nvidiactl, /dev/dxg or /dev/nvmap): no CUDA driver serves this process";
        return;
      }
      int n = 0;
      cudaError_t e = cu_.getDeviceCount(&n);
      if (e != cudaSuccess) {
        (void)cu_.getLastError();
        reason_ = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
        n = 0;
      } else if (n == 0) {
        reason_ = "the CUDA driver lists no device (CUDA_VISIBLE_DEVICES?)";
      }
      count_ = n;
    });
  }

  const CudaApi& cu_;
  std::once_flag probed_;
  int count_ = 0;
  std::string reason_;
};

}  // namespace

DeviceRuntime* cudaDeviceRuntime() {
  static CudaRuntime runtime(realCudaApi());
  return &runtime;
}

DeviceRuntime* makeCudaRuntime(const CudaApi& api) { return new CudaRuntime(api); }

}  // namespace tutti
