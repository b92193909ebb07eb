// DeviceRuntime over the CUDA runtime (linked statically, as NCCL does: the
// only thing needed at run time is the driver, and without one every call
// says so instead of failing to load).
#include <cuda_runtime.h>

#include <mutex>

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
    TUTTI_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e)));
    return Status::Ok();
  }
  void destroyEvent(DeviceEvent e) override { cudaEventDestroy(static_cast<cudaEvent_t>(e)); }
  Status synchronize(DeviceStream s) override {
    TUTTI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
    return Status::Ok();
  }
  Status launchHostFunc(DeviceStream s, void (*fn)(void*), void* arg) override {
    TUTTI_CUDA_CHECK(cudaLaunchHostFunc(static_cast<cudaStream_t>(s), fn, arg));
    return Status::Ok();
  }

  Result<void*> allocPinned(size_t bytes) override {
    void* p = nullptr;
    TUTTI_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    return p;
  }
  void freePinned(void* p) override { cudaFreeHost(p); }

  Status copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                     size_t rows, DeviceStream s) override {
    TUTTI_CUDA_CHECK(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, rows, cudaMemcpyDefault,
                                       static_cast<cudaStream_t>(s)));
    return Status::Ok();
  }

 private:
  // Asked once: without a driver every answer is the same.
  void probe() {
    std::call_once(probed_, [this] {
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

  std::once_flag probed_;
  int count_ = 0;
  std::string reason_;
};

}  // namespace

DeviceRuntime* cudaDeviceRuntime() {
  static CudaRuntime runtime;
  return &runtime;
}

}  // namespace tutti
