// Element-wise reduction kernels for every dtype x op of TUTTI_DTYPE_LIST and
// TUTTI_REDOP_LIST (kernels/dtype.h): adding a type there adds its kernels
// here. Each thread moves 16 bytes per load when the three pointers share
// their alignment (a scalar head and tail cover the rest; elementwise.cuh).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_reduce.h"
#include "kernels/cuda/elementwise.cuh"

namespace tutti {
namespace cuda {

int loadWorker();  // op_worker.cu

namespace {

template <typename T>
int reduceAs(void* dst, const void* a, const void* b, size_t n, RedOp op, int divisor, void* s) {
  switch (op) {
#define TUTTI_CUDA_OP_CASE(name, value, text) \
  case RedOp::k##name: return launchElementwise<T>(dst, a, b, n, Combine<T, RedOp::k##name>{divisor}, s);
    TUTTI_REDOP_LIST(TUTTI_CUDA_OP_CASE)
#undef TUTTI_CUDA_OP_CASE
  }
  return cudaErrorInvalidValue;
}

}  // namespace

int launchReduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
                 int divisor, void* stream) {
  switch (dtype) {
#define TUTTI_CUDA_TYPE_CASE(name, value, type, bytes, text) \
  case DataType::k##name: return reduceAs<type>(dst, a, b, count, op, divisor, stream);
    TUTTI_DTYPE_LIST(TUTTI_CUDA_TYPE_CASE)
#undef TUTTI_CUDA_TYPE_CASE
  }
  return cudaErrorInvalidValue;
}

int launchDivide(void* dst, const void* src, size_t count, DataType dtype, int divisor,
                 void* stream) {
  switch (dtype) {
#define TUTTI_CUDA_DIVIDE_CASE(name, value, type, bytes, text) \
  case DataType::k##name:                                      \
    return launchElementwise<type>(dst, src, src, count, DivideBy<type>{divisor}, stream);
    TUTTI_DTYPE_LIST(TUTTI_CUDA_DIVIDE_CASE)
#undef TUTTI_CUDA_DIVIDE_CASE
  }
  return cudaErrorInvalidValue;
}

int launchCopy(void* dst, const void* src, size_t bytes, void* stream) {
  // Word-sized elements when the sizes allow, so the scalar parts stay short.
  if (bytes % 4 == 0 && reinterpret_cast<uintptr_t>(dst) % 4 == 0 &&
      reinterpret_cast<uintptr_t>(src) % 4 == 0)
    return launchElementwise<uint32_t>(dst, src, src, bytes / 4, TakeWord{}, stream);
  return launchElementwise<uint8_t>(dst, src, src, bytes, Take{}, stream);
}

namespace {

template <typename T, typename F>
int loadElementwise() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, elementwiseKernel<T, F>);
}

template <typename T>
int loadFor() {
  int e = loadElementwise<T, DivideBy<T>>();
#define TUTTI_CUDA_LOAD_OP(name, value, text) \
  if (e == cudaSuccess) e = loadElementwise<T, Combine<T, RedOp::k##name>>();
  TUTTI_REDOP_LIST(TUTTI_CUDA_LOAD_OP)
#undef TUTTI_CUDA_LOAD_OP
  return e;
}

}  // namespace

int loadKernels() {
  int e = loadWorker();
  if (e == cudaSuccess) e = loadElementwise<uint8_t, Take>();
  if (e == cudaSuccess) e = loadElementwise<uint32_t, TakeWord>();
#define TUTTI_CUDA_LOAD_TYPE(name, value, type, bytes, text) \
  if (e == cudaSuccess) e = loadFor<type>();
  TUTTI_DTYPE_LIST(TUTTI_CUDA_LOAD_TYPE)
#undef TUTTI_CUDA_LOAD_TYPE
  return e;
}

}  // namespace cuda
}  // namespace tutti
