// The CUDA calls tutti's CUDA adapter (cuda_runtime.cpp) makes, as one table:
// CUDA's own functions on a GPU machine (realCudaApi), or an emulation with
// CUDA's rules over the emulated device in tests
// (tests/harness/emulated_cuda.h), so the adapter's own handling of those
// rules (the thread's last error, capture modes) runs without a GPU.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/dtype.h"

namespace tutti {

class DeviceRuntime;

struct CudaApi {
  // Whether a driver can serve this process at all (a device node exists):
  // without one, asking the runtime only costs time.
  bool (*driverPresent)();
  cudaError_t (*getDeviceCount)(int*);
  cudaError_t (*getDevice)(int*);
  cudaError_t (*setDevice)(int);
  cudaError_t (*deviceGetPCIBusId)(char*, int, int);
  cudaError_t (*deviceGetByPCIBusId)(int*, const char*);
  cudaError_t (*deviceCanAccessPeer)(int*, int, int);
  cudaError_t (*deviceEnablePeerAccess)(int, unsigned int);
  cudaError_t (*getLastError)();
  cudaError_t (*threadExchangeStreamCaptureMode)(cudaStreamCaptureMode*);
  // Driver calls, found through the runtime by the real table; they make no context.
  cudaError_t (*primaryContextActive)(int device, int* active);
  cudaError_t (*pointerOnDevice)(const void* p, int* onDevice, int* device);
  // nullptr when the driver has no cuStreamWaitValue32.
  CUresult (*streamWaitValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

  cudaError_t (*streamCreateWithFlags)(cudaStream_t*, unsigned int);
  cudaError_t (*streamDestroy)(cudaStream_t);
  cudaError_t (*streamSynchronize)(cudaStream_t);
  cudaError_t (*streamIsCapturing)(cudaStream_t, cudaStreamCaptureStatus*);
  cudaError_t (*eventCreateWithFlags)(cudaEvent_t*, unsigned int);
  cudaError_t (*eventRecord)(cudaEvent_t, cudaStream_t);
  cudaError_t (*eventQuery)(cudaEvent_t);
  cudaError_t (*eventSynchronize)(cudaEvent_t);
  cudaError_t (*streamWaitEvent)(cudaStream_t, cudaEvent_t, unsigned int);
  cudaError_t (*eventDestroy)(cudaEvent_t);

  cudaError_t (*hostAlloc)(void**, size_t, unsigned int);
  cudaError_t (*freeHost)(void*);
  cudaError_t (*hostRegister)(void*, size_t, unsigned int);
  cudaError_t (*hostUnregister)(void*);
  cudaError_t (*hostGetDevicePointer)(void**, void*, unsigned int);
  cudaError_t (*malloc)(void**, size_t);
  cudaError_t (*free)(void*);
  cudaError_t (*memcpyAsync)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
  cudaError_t (*deviceFlushGPUDirectRDMAWrites)(cudaFlushGPUDirectRDMAWritesTarget,
                                                cudaFlushGPUDirectRDMAWritesScope);
  cudaError_t (*ipcGetMemHandle)(cudaIpcMemHandle_t*, void*);
  cudaError_t (*ipcOpenMemHandle)(void**, cudaIpcMemHandle_t, unsigned int);
  cudaError_t (*ipcCloseMemHandle)(void*);

  // Not used by the adapter; by tests that hold it to CUDA's rules (a
  // user's capture, a graph's replays, host functions).
  cudaError_t (*streamBeginCapture)(cudaStream_t, cudaStreamCaptureMode);
  cudaError_t (*streamEndCapture)(cudaStream_t, cudaGraph_t*);
  cudaError_t (*graphInstantiate)(cudaGraphExec_t*, cudaGraph_t, unsigned long long);
  cudaError_t (*graphLaunch)(cudaGraphExec_t, cudaStream_t);
  cudaError_t (*graphExecDestroy)(cudaGraphExec_t);
  cudaError_t (*graphDestroy)(cudaGraph_t);
  cudaError_t (*launchHostFunc)(cudaStream_t, cudaHostFn_t, void*);

  // tutti's kernels (kernels/cuda/cuda_reduce.h): each returns the
  // launch's cudaError_t, which is the thread's last error after it.
  int (*launchReduce)(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
                      int divisor, void* stream);
  int (*launchDivide)(void* dst, const void* src, size_t count, DataType dtype, int divisor, void* stream);
  int (*launchCopy)(void* dst, const void* src, size_t bytes, void* stream);
  int (*loadKernels)();
  // The op queue's worker (kernels/cuda/cuda_reduce.h).
  int (*launchWorker)(void* queue, void* scratch, unsigned blocks, bool lean, void* stream);
  size_t (*workerScratchBytes)();
  int (*workerBlocks)(int sharers);
};

// CUDA's own functions (the runtime linked statically; driver calls through
// its entry points).
const CudaApi& realCudaApi();

// A DeviceRuntime over `api` (which must outlive it): the default runtime
// uses realCudaApi(); tests build one over the emulation.
DeviceRuntime* makeCudaRuntime(const CudaApi& api);

}  // namespace tutti
