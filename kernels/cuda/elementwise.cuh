// The element-wise machinery the CUDA kernels share (reduce_kernels.cu's
// launches and op_worker.cu's worker): how each dtype is computed, the ops
// as functors, and the split of a range into 16-byte vectors with a scalar
// head and tail. float16 and bfloat16 are combined in float32 and rounded to
// nearest even once, as the host kernels do, so both give the same bits.
// Internal to the kernels' .cu files: an anonymous namespace, so each file's
// kernels are its own.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/dtype.h"

namespace tutti {
namespace cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 4096;
constexpr size_t kVecBytes = 16;

// How a storage type is computed (integers wrap in their unsigned twin).
template <typename T, typename Enable = void>
struct Arith {
  using Acc = T;
  __device__ static Acc load(T v) { return v; }
  __device__ static T store(Acc v) { return v; }
};
template <typename T>
struct Arith<T, std::enable_if_t<std::is_integral<T>::value>> {
  using Acc = std::make_unsigned_t<T>;
  __device__ static Acc load(T v) { return static_cast<Acc>(v); }
  __device__ static T store(Acc v) { return static_cast<T>(v); }
};
template <>
struct Arith<Half> {
  using Acc = float;
  __device__ static float load(Half v) { return __half2float(__ushort_as_half(v.bits)); }
  __device__ static Half store(float v) { return Half{__half_as_ushort(__float2half_rn(v))}; }
};
template <>
struct Arith<Bfloat16> {
  using Acc = float;
  __device__ static float load(Bfloat16 v) { return __bfloat162float(__ushort_as_bfloat16(v.bits)); }
  __device__ static Bfloat16 store(float v) {
    return Bfloat16{__bfloat16_as_ushort(__float2bfloat16_rn(v))};
  }
};

template <typename T, typename A>
__device__ A divideAcc(A sum, int divisor) {
  if constexpr (std::is_integral<T>::value) return static_cast<A>(static_cast<T>(static_cast<T>(sum) / static_cast<T>(divisor)));
  else return sum / static_cast<A>(divisor);
}

// One functor per RedOp; max and min compare signed integers as signed.
template <typename T, RedOp op>
struct Combine {
  using A = typename Arith<T>::Acc;
  int divisor;
  __device__ A operator()(A x, A y) const {
    if constexpr (op == RedOp::kSum) return x + y;
    else if constexpr (op == RedOp::kProd) return x * y;
    else if constexpr (op == RedOp::kMax) {
      if constexpr (std::is_integral<T>::value) return static_cast<T>(x) > static_cast<T>(y) ? x : y;
      else return x > y ? x : y;
    } else if constexpr (op == RedOp::kMin) {
      if constexpr (std::is_integral<T>::value) return static_cast<T>(x) < static_cast<T>(y) ? x : y;
      else return x < y ? x : y;
    } else {
      return divideAcc<T>(static_cast<A>(x + y), divisor);
    }
  }
};

// Divide ignores its second operand.
template <typename T>
struct DivideBy {
  using A = typename Arith<T>::Acc;
  int divisor;
  __device__ A operator()(A x, A) const { return divideAcc<T>(x, divisor); }
};

template <typename T>
struct alignas(kVecBytes) Vec {
  static constexpr int kN = kVecBytes / sizeof(T);
  T v[kN];
};

// Where 16-byte loads can start: elements [head, head + nvec * kN) go 16
// bytes at a time when the three pointers share their alignment; the rest
// one by one.
template <typename T>
__host__ __device__ void splitForVectors(const void* dst, const void* a, const void* b, size_t n, size_t* head,
                                         size_t* nvec) {
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
  const uintptr_t pa = reinterpret_cast<uintptr_t>(a);
  const uintptr_t pb = reinterpret_cast<uintptr_t>(b);
  *head = n;
  *nvec = 0;
  const size_t misalign = d % kVecBytes;
  if (pa % kVecBytes == misalign && pb % kVecBytes == misalign && misalign % sizeof(T) == 0) {
    *head = ((kVecBytes - misalign) % kVecBytes) / sizeof(T);
    if (*head > n) *head = n;
    *nvec = (n - *head) / Vec<T>::kN;
  }
}

// dst[i] = f(a[i], b[i]) for i < n, this thread's share (tid, tid + stride,
// ...) of the split above.
template <typename T, typename F>
__device__ void elementwiseShare(T* dst, const T* a, const T* b, size_t n, size_t head, size_t nvec, F f,
                                 size_t tid, size_t stride) {
  using Ar = Arith<T>;
  constexpr int kN = Vec<T>::kN;
  auto* vd = reinterpret_cast<Vec<T>*>(dst + head);
  const auto* va = reinterpret_cast<const Vec<T>*>(a + head);
  const auto* vb = reinterpret_cast<const Vec<T>*>(b + head);
  auto combine = [&](const Vec<T>& x, const Vec<T>& y) {
    Vec<T> r;
#pragma unroll
    for (int k = 0; k < kN; ++k) r.v[k] = Ar::store(f(Ar::load(x.v[k]), Ar::load(y.v[k])));
    return r;
  };
  // Several loads in flight a thread: a small grid (the worker's) reaches
  // the memory's rate only so.
  constexpr int kUnroll = 4;
  size_t i = tid;
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
    Vec<T> x[kUnroll], y[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      x[u] = va[i + u * stride];
      y[u] = vb[i + u * stride];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) vd[i + u * stride] = combine(x[u], y[u]);
  }
  for (; i < nvec; i += stride) vd[i] = combine(va[i], vb[i]);
  const size_t tailStart = head + nvec * kN;
  const size_t scalar = head + (n - tailStart);
  for (size_t j = tid; j < scalar; j += stride) {
    size_t i = j < head ? j : tailStart + (j - head);
    dst[i] = Ar::store(f(Ar::load(a[i]), Ar::load(b[i])));
  }
}

// Bounded so every dtype and op launches with kThreads threads (uint8's
// average took 137 registers unbounded: "too many resources" on an H200),
// at 128 registers a thread at most.
template <typename T, typename F>
__global__ void __launch_bounds__(kThreads) elementwiseKernel(T* dst, const T* a, const T* b, size_t n, size_t head,
                                  size_t nvec, F f) {
  elementwiseShare(dst, a, b, n, head, nvec, f, static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                   static_cast<size_t>(blockDim.x) * gridDim.x);
}

inline unsigned blocksFor(size_t work) {
  size_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <typename T, typename F>
int launchElementwise(void* dst, const void* a, const void* b, size_t n, F f, void* stream) {
  if (n == 0) return cudaSuccess;
  size_t head, nvec;
  splitForVectors<T>(dst, a, b, n, &head, &nvec);
  const size_t work = nvec + head + (n - head - nvec * Vec<T>::kN);
  elementwiseKernel<T><<<blocksFor(work), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n, head, nvec, f);
  return cudaGetLastError();
}

// Copies as element-wise ops: bytes, or 4-byte words when the sizes allow.
struct Take {
  __device__ uint8_t operator()(uint8_t x, uint8_t) const { return x; }
};
struct TakeWord {
  __device__ uint32_t operator()(uint32_t x, uint32_t) const { return x; }
};

}  // namespace
}  // namespace cuda
}  // namespace tutti
