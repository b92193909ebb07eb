// Element-wise reduction kernels for every dtype x op of TUTTI_DTYPE_LIST and
// TUTTI_REDOP_LIST (kernels/dtype.h): adding a type there adds its kernels
// here. Each thread moves 16 bytes per load when the three pointers share
// their alignment (a scalar head and tail cover the rest); float16 and
// bfloat16 are combined in float32 and rounded to nearest even once, as the
// host kernels do, so both give the same bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cuda_reduce.h"
#include "kernels/op_queue.h"

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

unsigned blocksFor(size_t work) {
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

namespace {
struct Take {
  __device__ uint8_t operator()(uint8_t x, uint8_t) const { return x; }
};
struct TakeWord {
  __device__ uint32_t operator()(uint32_t x, uint32_t) const { return x; }
};
}  // namespace

int launchCopy(void* dst, const void* src, size_t bytes, void* stream) {
  // Word-sized elements when the sizes allow, so the scalar parts stay short.
  if (bytes % 4 == 0 && reinterpret_cast<uintptr_t>(dst) % 4 == 0 &&
      reinterpret_cast<uintptr_t>(src) % 4 == 0)
    return launchElementwise<uint32_t>(dst, src, src, bytes / 4, TakeWord{}, stream);
  return launchElementwise<uint8_t>(dst, src, src, bytes, Take{}, stream);
}

// The worker (kernels/op_queue.h): ops handed over by the background thread
// while a collective runs, each over the whole grid.
namespace {

__device__ uint64_t loadAcquireSystem(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ void storeReleaseSystem(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ unsigned long long loadAcquireGpu(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Every block of the grid arrives before any leaves. The counter only
// grows: each launch of the same grid size arrives a multiple of gridDim
// times, so a ticket says which round it belongs to.
// The fence is system-wide: what the block wrote reaches peers and the host
// before the worker says `done` (one thread's fence after the block's
// barrier covers the block's writes: fences are cumulative).
__device__ void gridBarrier(unsigned long long* arrivals) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    const unsigned long long ticket = atomicAdd(arrivals, 1ull);
    const unsigned long long target = (ticket / gridDim.x + 1) * gridDim.x;
    while (loadAcquireGpu(arrivals) < target) __nanosleep(32);
  }
  __syncthreads();
}

template <typename T, typename F>
__device__ void share(const QueuedOp& q, const void* b, F f, size_t tid, size_t stride) {
  size_t head, nvec;
  splitForVectors<T>(q.dst, q.a, b, q.count, &head, &nvec);
  elementwiseShare<T>(static_cast<T*>(q.dst), static_cast<const T*>(q.a), static_cast<const T*>(b), q.count,
                      head, nvec, f, tid, stride);
}

template <typename T>
__device__ void runTyped(const QueuedOp& q, size_t tid, size_t stride) {
  if (static_cast<QueuedOpKind>(q.kind) == QueuedOpKind::kDivide) {
    share<T>(q, q.a, DivideBy<T>{q.divisor}, tid, stride);
    return;
  }
  switch (static_cast<RedOp>(q.op)) {
#define TUTTI_CUDA_WORKER_OP(name, value, text) \
  case RedOp::k##name: share<T>(q, q.b, Combine<T, RedOp::k##name>{q.divisor}, tid, stride); return;
    TUTTI_REDOP_LIST(TUTTI_CUDA_WORKER_OP)
#undef TUTTI_CUDA_WORKER_OP
  }
}

__device__ void runOp(const QueuedOp& q, size_t tid, size_t stride) {
  if (static_cast<QueuedOpKind>(q.kind) == QueuedOpKind::kCopy) {
    const bool words = q.count % 4 == 0 && reinterpret_cast<uintptr_t>(q.dst) % 4 == 0 &&
                       reinterpret_cast<uintptr_t>(q.a) % 4 == 0;
    QueuedOp c = q;
    if (words) {
      c.count = q.count / 4;
      share<uint32_t>(c, q.a, TakeWord{}, tid, stride);
    } else {
      share<uint8_t>(c, q.a, Take{}, tid, stride);
    }
    return;
  }
  switch (static_cast<DataType>(q.dtype)) {
#define TUTTI_CUDA_WORKER_TYPE(name, value, type, bytes, text) \
  case DataType::k##name: runTyped<type>(q, tid, stride); return;
    TUTTI_DTYPE_LIST(TUTTI_CUDA_WORKER_TYPE)
#undef TUTTI_CUDA_WORKER_TYPE
  }
}

__global__ void __launch_bounds__(kThreads) opWorker(OpQueueShared* queue, unsigned long long* arrivals) {
  __shared__ QueuedOp op;
  __shared__ uint64_t next;
  // Every block reads where to start before any block may write `done`.
  if (threadIdx.x == 0) next = loadAcquireSystem(&queue->done);
  gridBarrier(arrivals);
  if (blockIdx.x == 0 && threadIdx.x == 0) storeReleaseSystem(&queue->started, loadAcquireSystem(&queue->started) + 1);
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  __shared__ bool abandoned;
  constexpr unsigned kOpWords = sizeof(QueuedOp) / sizeof(uint64_t);
  for (;;) {
    if (threadIdx.x == 0) {
      // The host abandons only after its last post: once that is seen,
      // `posted` is final, and every block decides the same.
      abandoned = false;
      while (loadAcquireSystem(&queue->posted) <= next) {
        if (loadAcquireSystem(&queue->abandoned) != 0) {
          abandoned = loadAcquireSystem(&queue->posted) <= next;
          break;
        }
        __nanosleep(128);
      }
    }
    __syncthreads();
    // Every block is between the same two ops here: leaving together keeps
    // the barrier's count a multiple of the grid.
    if (abandoned) return;
    // A word a thread, past the caches (the host rewrites slots as the ring
    // goes round): one trip over the bus, not one a word.
    if (threadIdx.x < kOpWords)
      reinterpret_cast<uint64_t*>(&op)[threadIdx.x] =
          reinterpret_cast<const volatile uint64_t*>(&queue->ops[next % kOpQueueSlots])[threadIdx.x];
    __syncthreads();
    const bool stop = static_cast<QueuedOpKind>(op.kind) == QueuedOpKind::kStop;
    if (!stop) runOp(op, tid, stride);
    // The op's writes reach peers and the host before `done` says so (the
    // barrier's fence).
    gridBarrier(arrivals);
    if (threadIdx.x == 0) ++next;
    if (blockIdx.x == 0 && threadIdx.x == 0) storeReleaseSystem(&queue->done, next);
    if (stop) return;
  }
}

// A variant of opWorker for measurement only (cuda-kernels-bench's
// workerFixedCost; no device call uses it): GPU run 9 took 367 us for eight
// 1 MiB ops on 33 blocks and 199 on 16, where each block's first thread
// reads the host's queue over the bus and fences system-wide once an op.
// Here one thread reads the host's queue and hands each op to the other
// blocks through device memory, and one system fence an op covers the
// grid's writes (the others' gpu-scope releases, acquired through the
// barrier, come before it). If a GPU shows it cheaper, it replaces opWorker.
struct LeanMailbox {
  unsigned long long arrivals;  // the grid barrier's counter
  unsigned long long handed;    // ops handed to the grid, over every launch
  uint64_t op[sizeof(QueuedOp) / sizeof(uint64_t)];
  uint64_t abandoned;
};

__device__ void storeReleaseGpu(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ void gridBarrierGpu(unsigned long long* arrivals) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned long long ticket = atomicAdd(arrivals, 1ull);
    const unsigned long long target = (ticket / gridDim.x + 1) * gridDim.x;
    while (loadAcquireGpu(arrivals) < target) __nanosleep(32);
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads) opWorkerLean(OpQueueShared* queue, LeanMailbox* box) {
  __shared__ QueuedOp op;
  __shared__ uint64_t next;
  __shared__ unsigned long long handed;
  __shared__ bool abandoned;
  constexpr unsigned kOpWords = sizeof(QueuedOp) / sizeof(uint64_t);
  const bool reader = blockIdx.x == 0;
  // Every block reads where the hand-overs stand before block 0 may add one.
  if (threadIdx.x == 0) {
    handed = loadAcquireGpu(&box->handed);
    if (reader) next = loadAcquireSystem(&queue->done);
  }
  gridBarrierGpu(&box->arrivals);
  if (reader && threadIdx.x == 0) storeReleaseSystem(&queue->started, loadAcquireSystem(&queue->started) + 1);
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (;;) {
    if (reader) {
      if (threadIdx.x == 0) {
        abandoned = false;
        while (loadAcquireSystem(&queue->posted) <= next) {
          if (loadAcquireSystem(&queue->abandoned) != 0) {
            abandoned = loadAcquireSystem(&queue->posted) <= next;
            break;
          }
          __nanosleep(128);
        }
      }
      __syncthreads();
      if (!abandoned && threadIdx.x < kOpWords) {
        const uint64_t word = reinterpret_cast<const volatile uint64_t*>(&queue->ops[next % kOpQueueSlots])[threadIdx.x];
        reinterpret_cast<uint64_t*>(&op)[threadIdx.x] = word;
        reinterpret_cast<volatile uint64_t*>(box->op)[threadIdx.x] = word;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        box->abandoned = abandoned;
        __threadfence();
        storeReleaseGpu(&box->handed, ++handed);
      }
    } else {
      if (threadIdx.x == 0) {
        ++handed;
        while (loadAcquireGpu(&box->handed) < handed) __nanosleep(32);
        abandoned = reinterpret_cast<volatile uint64_t*>(&box->abandoned)[0] != 0;
      }
      __syncthreads();
      if (!abandoned && threadIdx.x < kOpWords)
        reinterpret_cast<uint64_t*>(&op)[threadIdx.x] = reinterpret_cast<volatile uint64_t*>(box->op)[threadIdx.x];
    }
    __syncthreads();
    if (abandoned) return;
    const bool stop = static_cast<QueuedOpKind>(op.kind) == QueuedOpKind::kStop;
    if (!stop) runOp(op, tid, stride);
    // Every block has read this op's mailbox before any passes the barrier,
    // so block 0 may write the next one after it.
    gridBarrierGpu(&box->arrivals);
    if (reader && threadIdx.x == 0) {
      __threadfence_system();
      storeReleaseSystem(&queue->done, ++next);
    }
    if (stop) return;
  }
}

}  // namespace

int launchWorker(void* queue, void* arrivals, unsigned blocks, void* stream) {
  opWorker<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<OpQueueShared*>(queue), static_cast<unsigned long long*>(arrivals));
  return cudaGetLastError();
}

size_t workerLeanScratchBytes() { return sizeof(LeanMailbox); }

int launchWorkerLean(void* queue, void* scratch, unsigned blocks, void* stream) {
  opWorkerLean<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<OpQueueShared*>(queue), static_cast<LeanMailbox*>(scratch));
  return cudaGetLastError();
}

int workerBlocks(int sharers) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 1;
  // A share of what the GPU holds at once: the workers of every rank on the
  // GPU (threads of one process, or processes under MPS) must be resident
  // together, since each spins until its peers' chunks arrive; and a quarter
  // at most, so the workers of three more communicators of a rank (PyTorch's
  // groups, used at once) still fit beside it (H200 run 8: an eighth of the
  // GPU moved 0.42 of the copy's rate).
  int perSm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, opWorker, kThreads, 0) != cudaSuccess) perSm = 1;
  return std::max(1, sms * std::max(1, perSm) / std::max(4, sharers));
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
  cudaFuncAttributes attributes;
  int e = cudaFuncGetAttributes(&attributes, opWorker);
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
