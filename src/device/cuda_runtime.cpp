// DeviceRuntime over the CUDA runtime (linked statically, as NCCL does: the
// only thing needed at run time is the driver, and without one every call
// says so instead of failing to load).
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

#include "kernels/cuda/cuda_reduce.h"
#include "src/device/device_runtime.h"

namespace tutti {

namespace {

Status cudaFailure(cudaError_t e, const char* what) {
  return Status(Code::kCudaError,
                std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

#define TUTTI_CUDA_CHECK(call)                                  \
  do {                                                          \
    cudaError_t tutti_e_ = (call);                              \
    if (tutti_e_ != cudaSuccess) return cudaFailure(tutti_e_, #call); \
  } while (0)

// Another thread may be capturing a CUDA graph in global mode, in which CUDA
// refuses "potentially unsafe" calls (allocations, frees, registrations,
// event and stream waits) from every thread and invalidates that capture.
// tutti's own calls are never part of a capture: they run with the calling
// thread's mode relaxed, and the caller's mode is put back after.
class RelaxedCapture {
 public:
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

class CudaRuntime final : public DeviceRuntime {
 public:
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
    TUTTI_CUDA_CHECK(cudaGetDevice(&d));
    return d;
  }
  Status setDevice(int device) override {
    TUTTI_CUDA_CHECK(cudaSetDevice(device));
    return Status::Ok();
  }
  Result<std::string> pciBusId(int device) override {
    char id[32] = {0};
    TUTTI_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof(id), device));
    return std::string(id);
  }

  PointerInfo pointerInfo(const void* p) override {
    PointerInfo info;
    if (!p || deviceCount() == 0) return info;
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      (void)cudaGetLastError();  // an unknown pointer is plain host memory
      return info;
    }
    info.onDevice = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
    info.device = info.onDevice ? a.device : -1;
    return info;
  }

  Result<DeviceStream> createStream() override {
    RelaxedCapture relaxed;
    cudaStream_t s = nullptr;
    // Non-blocking: tutti's copies must not wait for the legacy default
    // stream, which the user's gate may be holding.
    TUTTI_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return static_cast<DeviceStream>(s);
  }
  void destroyStream(DeviceStream s) override { cudaStreamDestroy(static_cast<cudaStream_t>(s)); }

  Result<DeviceEvent> recordEvent(DeviceStream s) override {
    cudaEvent_t e = nullptr;
    TUTTI_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync));
    cudaError_t r = cudaEventRecord(e, static_cast<cudaStream_t>(s));
    if (r != cudaSuccess) {
      cudaEventDestroy(e);
      return cudaFailure(r, "cudaEventRecord");
    }
    return static_cast<DeviceEvent>(e);
  }
  Status waitEvent(DeviceEvent e) override {
    RelaxedCapture relaxed;
    TUTTI_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e)));
    return Status::Ok();
  }
  void destroyEvent(DeviceEvent e) override { cudaEventDestroy(static_cast<cudaEvent_t>(e)); }
  Status synchronize(DeviceStream s) override {
    RelaxedCapture relaxed;
    TUTTI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
    return Status::Ok();
  }
  Status waitWordAsync(DeviceStream s, const uint32_t* word, uint32_t value) override {
    TUTTI_ASSIGN_OR_RETURN(StreamWaitValue32 wait, streamWaitValue32());
    void* d = nullptr;
    TUTTI_CUDA_CHECK(cudaHostGetDevicePointer(&d, const_cast<uint32_t*>(word), 0));
    CUresult r = wait(static_cast<CUstream>(s), reinterpret_cast<CUdeviceptr>(d), value,
                      CU_STREAM_WAIT_VALUE_GEQ);
    if (r != CUDA_SUCCESS)
      return Status(Code::kCudaError, "cuStreamWaitValue32: CUresult " + std::to_string(r));
    return Status::Ok();
  }
  Result<bool> capturing(DeviceStream s) override {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    TUTTI_CUDA_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(s), &status));
    return status != cudaStreamCaptureStatusNone;
  }

  Result<void*> allocPinned(size_t bytes) override {
    RelaxedCapture relaxed;
    void* p = nullptr;
    TUTTI_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    return p;
  }
  void freePinned(void* p) override {
    RelaxedCapture relaxed;
    cudaFreeHost(p);
  }
  Result<void*> registerHost(void* p, size_t bytes) override {
    RelaxedCapture relaxed;
    TUTTI_CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable));
    void* d = nullptr;
    cudaError_t e = cudaHostGetDevicePointer(&d, p, 0);
    if (e != cudaSuccess) {
      cudaHostUnregister(p);
      return cudaFailure(e, "cudaHostGetDevicePointer");
    }
    return d;
  }
  void unregisterHost(void* p) override {
    RelaxedCapture relaxed;
    cudaHostUnregister(p);
  }

  Status copyAsync(void* dst, const void* src, size_t bytes, DeviceStream s) override {
    TUTTI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(s)));
    return Status::Ok();
  }
  Result<DeviceEvent> createEvent() override {
    cudaEvent_t e = nullptr;
    TUTTI_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync));
    return static_cast<DeviceEvent>(e);
  }
  Status recordInto(DeviceEvent e, DeviceStream s) override {
    TUTTI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)));
    return Status::Ok();
  }
  Result<bool> eventDone(DeviceEvent e) override {
    RelaxedCapture relaxed;
    cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (r == cudaErrorNotReady) {
      // "Not ready" is also left as the thread's last error, which the
      // next kernel launch would report as its own failure.
      (void)cudaGetLastError();
      return false;
    }
    TUTTI_CUDA_CHECK(r);
    return true;
  }

  Result<void*> allocDevice(size_t bytes) override {
    RelaxedCapture relaxed;
    void* p = nullptr;
    TUTTI_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  void freeDevice(void* p) override {
    RelaxedCapture relaxed;
    cudaFree(p);
  }
  Status flushRemoteWrites() override {
    TUTTI_CUDA_CHECK(cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                                                        cudaFlushGPUDirectRDMAWritesToOwner));
    return Status::Ok();
  }
  Status loadKernels() override {
    TUTTI_CUDA_CHECK(static_cast<cudaError_t>(cuda::loadKernels()));
    return Status::Ok();
  }
  Status reduceAsync(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
                     int divisor, DeviceStream s) override {
    auto e = static_cast<cudaError_t>(cuda::launchReduce(dst, a, b, count, dtype, op, divisor, s));
    TUTTI_CUDA_CHECK(e);
    return Status::Ok();
  }
  Status divideAsync(void* dst, const void* src, size_t count, DataType dtype, int divisor,
                     DeviceStream s) override {
    auto e = static_cast<cudaError_t>(cuda::launchDivide(dst, src, count, dtype, divisor, s));
    TUTTI_CUDA_CHECK(e);
    return Status::Ok();
  }

  Result<int> deviceByBusId(const std::string& busId) override {
    int d = -1;
    TUTTI_CUDA_CHECK(cudaDeviceGetByPCIBusId(&d, busId.c_str()));
    return d;
  }
  bool canAccessPeer(int device, int peer) override {
    if (device == peer) return true;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, device, peer) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return can != 0;
  }
  Status enablePeerAccess(int peer) override {
    int self = -1;
    TUTTI_CUDA_CHECK(cudaGetDevice(&self));
    if (self == peer) return Status::Ok();
    cudaError_t r = cudaDeviceEnablePeerAccess(peer, 0);
    if (r == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
      return Status::Ok();
    }
    TUTTI_CUDA_CHECK(r);
    return Status::Ok();
  }
  Result<DeviceIpcHandle> exportMemory(void* p) override {
    cudaIpcMemHandle_t h;
    TUTTI_CUDA_CHECK(cudaIpcGetMemHandle(&h, p));
    static_assert(sizeof(h) <= sizeof(DeviceIpcHandle::bytes), "cudaIpcMemHandle_t grew");
    DeviceIpcHandle out;
    std::memcpy(out.bytes, &h, sizeof(h));
    return out;
  }
  Result<void*> openMemory(const DeviceIpcHandle& handle) override {
    RelaxedCapture relaxed;
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle.bytes, sizeof(h));
    void* p = nullptr;
    TUTTI_CUDA_CHECK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
    return p;
  }
  void closeMemory(void* p) override {
    RelaxedCapture relaxed;
    cudaIpcCloseMemHandle(p);
  }

 private:
  // Asked once: without a driver every answer is the same.
  void probe() {
    std::call_once(probed_, [this] {
      if (!driverNodePresent()) {
        reason_ = "no NVIDIA device node (/dev/nvidiactl, /dev/dxg or /dev/nvmap): no CUDA driver serves this process";
        return;
      }
      int n = 0;
      cudaError_t e = cudaGetDeviceCount(&n);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        reason_ = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
        n = 0;
      } else if (n == 0) {
        reason_ = "the CUDA driver lists no device (CUDA_VISIBLE_DEVICES?)";
      }
      count_ = n;
    });
  }

  // The nodes a CUDA driver opens (a GPU server's, WSL's, Tegra's). Without
  // one, asking the runtime costs each rank 2 ms of searching for
  // libcuda.so.1 and gives the same answer.
  static bool driverNodePresent() {
    for (const char* node : {"/dev/nvidiactl", "/dev/dxg", "/dev/nvmap"})
      if (access(node, F_OK) == 0) return true;
    return false;
  }

  // cuStreamWaitValue32 is a driver call: found once through the runtime,
  // so the driver library stays a run-time dependency only.
  using StreamWaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  Result<StreamWaitValue32> streamWaitValue32() {
    std::call_once(waitFound_, [this] {
      void* fn = nullptr;
      cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
      cudaError_t e = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000,
                                                       cudaEnableDefault, &found);
      if (e == cudaSuccess && found == cudaDriverEntryPointSuccess && fn)
        waitValue32_ = reinterpret_cast<StreamWaitValue32>(fn);
      else
        (void)cudaGetLastError();
    });
    if (!waitValue32_)
      return Status(Code::kCudaError, "the CUDA driver has no cuStreamWaitValue32, which stream gates need");
    return waitValue32_;
  }

  std::once_flag probed_;
  std::once_flag waitFound_;
  StreamWaitValue32 waitValue32_ = nullptr;
  int count_ = 0;
  std::string reason_;
};

}  // namespace

DeviceRuntime* cudaDeviceRuntime() {
  static CudaRuntime runtime;
  return &runtime;
}

}  // namespace tutti
