// CUDA's own functions for the adapter's table. The driver calls are found
// once through the runtime's entry points, so the driver library stays a
// run-time dependency only.
#include "src/device/cuda_api.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <mutex>

#include "kernels/cuda/cuda_reduce.h"

namespace tutti {

namespace {

// The nodes a CUDA driver opens (a GPU server's, WSL's, Tegra's). Without
// one, asking the runtime costs each rank 2 ms of searching for
// libcuda.so.1 and gives the same answer.
bool driverNodePresent() {
  for (const char* node : {"/dev/nvidiactl", "/dev/dxg", "/dev/nvmap"})
    if (access(node, F_OK) == 0) return true;
  return false;
}

struct DriverCalls {
  CUresult (*streamWaitValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int) = nullptr;
  CUresult (*deviceGet)(CUdevice*, int) = nullptr;
  CUresult (*primaryCtxGetState)(CUdevice, unsigned int*, int*) = nullptr;
  CUresult (*ctxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*pointerGetAttributes)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr) = nullptr;
};

template <typename Fn>
void find(const char* name, Fn* out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
      found == cudaDriverEntryPointSuccess && fn)
    *out = reinterpret_cast<Fn>(fn);
  else
    (void)cudaGetLastError();
}

const DriverCalls& driver() {
  static const DriverCalls calls = [] {
    DriverCalls c;
    find("cuStreamWaitValue32", &c.streamWaitValue32);
    find("cuDeviceGet", &c.deviceGet);
    find("cuDevicePrimaryCtxGetState", &c.primaryCtxGetState);
    find("cuCtxGetCurrent", &c.ctxGetCurrent);
    find("cuPointerGetAttributes", &c.pointerGetAttributes);
    return c;
  }();
  return calls;
}

CUresult streamWaitValue32(CUstream s, CUdeviceptr p, cuuint32_t value, unsigned int flags) {
  if (!driver().streamWaitValue32) return CUDA_ERROR_NOT_SUPPORTED;
  return driver().streamWaitValue32(s, p, value, flags);
}

// The device's primary context (the runtime's), or a context the calling
// thread made current itself (the driver API's own contexts).
cudaError_t primaryContextActive(int device, int* active) {
  const DriverCalls& d = driver();
  CUdevice dev = 0;
  unsigned int flags = 0;
  CUcontext current = nullptr;
  *active = 0;
  if (d.ctxGetCurrent && d.ctxGetCurrent(&current) == CUDA_SUCCESS && current) {
    *active = 1;
    return cudaSuccess;
  }
  if (!d.deviceGet || !d.primaryCtxGetState) return cudaErrorNotSupported;
  if (d.deviceGet(&dev, device) != CUDA_SUCCESS || d.primaryCtxGetState(dev, &flags, active) != CUDA_SUCCESS)
    return cudaErrorInvalidDevice;
  return cudaSuccess;
}

// The driver's query answers without a current context (the runtime's
// would make one on the current device).
cudaError_t pointerOnDevice(const void* p, int* onDevice, int* device) {
  const DriverCalls& d = driver();
  *onDevice = 0;
  *device = -1;
  if (!d.pointerGetAttributes) return cudaErrorNotSupported;
  unsigned int type = 0;
  int managed = 0, ordinal = -1;
  CUpointer_attribute what[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* into[] = {&type, &managed, &ordinal};
  if (d.pointerGetAttributes(3, what, into, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    return cudaSuccess;  // not a pointer CUDA knows: plain host memory
  *onDevice = type == CU_MEMORYTYPE_DEVICE || managed;
  *device = *onDevice ? ordinal : -1;
  return cudaSuccess;
}

cudaError_t graphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}

}  // namespace

const CudaApi& realCudaApi() {
  static const CudaApi api = [] {
    CudaApi a{};
    a.driverPresent = driverNodePresent;
    a.getDeviceCount = cudaGetDeviceCount;
    a.getDevice = cudaGetDevice;
    a.setDevice = cudaSetDevice;
    a.deviceGetPCIBusId = cudaDeviceGetPCIBusId;
    a.deviceGetByPCIBusId = cudaDeviceGetByPCIBusId;
    a.deviceCanAccessPeer = cudaDeviceCanAccessPeer;
    a.deviceEnablePeerAccess = cudaDeviceEnablePeerAccess;
    a.getLastError = cudaGetLastError;
    a.threadExchangeStreamCaptureMode = cudaThreadExchangeStreamCaptureMode;
    a.primaryContextActive = primaryContextActive;
    a.pointerOnDevice = pointerOnDevice;
    a.streamWaitValue32 = streamWaitValue32;
    a.streamCreateWithFlags = cudaStreamCreateWithFlags;
    a.streamDestroy = cudaStreamDestroy;
    a.streamSynchronize = cudaStreamSynchronize;
    a.streamIsCapturing = cudaStreamIsCapturing;
    a.eventCreateWithFlags = cudaEventCreateWithFlags;
    a.eventRecord = cudaEventRecord;
    a.eventQuery = cudaEventQuery;
    a.eventSynchronize = cudaEventSynchronize;
    a.streamWaitEvent = cudaStreamWaitEvent;
    a.eventDestroy = cudaEventDestroy;
    a.hostAlloc = cudaHostAlloc;
    a.freeHost = cudaFreeHost;
    a.hostRegister = cudaHostRegister;
    a.hostUnregister = cudaHostUnregister;
    a.hostGetDevicePointer = cudaHostGetDevicePointer;
    a.malloc = cudaMalloc;
    a.free = cudaFree;
    a.memcpyAsync = cudaMemcpyAsync;
    a.deviceFlushGPUDirectRDMAWrites = cudaDeviceFlushGPUDirectRDMAWrites;
    a.ipcGetMemHandle = cudaIpcGetMemHandle;
    a.ipcOpenMemHandle = cudaIpcOpenMemHandle;
    a.ipcCloseMemHandle = cudaIpcCloseMemHandle;
    a.streamBeginCapture = cudaStreamBeginCapture;
    a.streamEndCapture = cudaStreamEndCapture;
    a.graphInstantiate = graphInstantiate;
    a.graphLaunch = cudaGraphLaunch;
    a.graphExecDestroy = cudaGraphExecDestroy;
    a.graphDestroy = cudaGraphDestroy;
    a.launchHostFunc = cudaLaunchHostFunc;
    a.launchReduce = cuda::launchReduce;
    a.launchDivide = cuda::launchDivide;
    a.launchCopy = cuda::launchCopy;
    a.loadKernels = cuda::loadKernels;
    a.launchWorker = cuda::launchWorker;
    a.workerBlocks = cuda::workerBlocks;
    a.workerScratchBytes = cuda::workerScratchBytes;
    return a;
  }();
  return api;
}

}  // namespace tutti
