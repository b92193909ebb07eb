#include "bench/perf_device.h"

#ifdef TUTTI_HAVE_CUDA
#include <cuda_runtime.h>

std::string PerfDevice::select(int rank) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable GPU: ") + cudaGetErrorString(e);
  if (n == 0) return "no usable GPU: none visible";
  e = cudaSetDevice(rank % n);
  return e == cudaSuccess ? "" : std::string("cudaSetDevice: ") + cudaGetErrorString(e);
}

PerfDevice::~PerfDevice() {
  if (send_) cudaFree(send_);
  if (recv_) cudaFree(recv_);
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

std::string PerfDevice::allocate(size_t bytes) {
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e == cudaSuccess) stream_ = s;
  if (e == cudaSuccess) e = cudaMalloc(&send_, bytes);
  if (e == cudaSuccess) e = cudaMalloc(&recv_, bytes);
  if (e == cudaSuccess) e = cudaMemset(send_, 0, bytes);
  if (e == cudaSuccess) e = cudaMemset(recv_, 0, bytes);
  return e == cudaSuccess ? "" : std::string("device buffers: ") + cudaGetErrorString(e);
}

void PerfDevice::upload(void* device, const void* host, size_t bytes) {
  cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
}

void PerfDevice::download(void* host, const void* device, size_t bytes) {
  cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
}

std::string PerfDevice::synchronize() {
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

#else

std::string PerfDevice::select(int) { return "tutti-perf was built without CUDA"; }
PerfDevice::~PerfDevice() = default;
std::string PerfDevice::allocate(size_t) { return "tutti-perf was built without CUDA"; }
void PerfDevice::upload(void*, const void*, size_t) {}
void PerfDevice::download(void*, const void*, size_t) {}
std::string PerfDevice::synchronize() { return ""; }

#endif
