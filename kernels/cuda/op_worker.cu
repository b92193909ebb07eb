// The worker kernel (kernels/op_queue.h): ops handed over by the background
// thread while a collective runs, each over the whole grid; and its
// one-reader variant, for measurement.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/cuda_reduce.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/op_queue.h"

namespace tutti {
namespace cuda {

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
// The fence is system-wide unless asked otherwise: what the block wrote
// reaches peers and the host before the worker says `done` (one thread's
// fence after the block's barrier covers the block's writes: fences are
// cumulative).
__device__ void gridBarrier(unsigned long long* arrivals, bool systemFence = true) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (systemFence)
      __threadfence_system();
    else
      __threadfence();
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

// Waits until op `next` is posted; true if the host abandoned the worker
// instead. The host abandons only after its last post: once that is seen,
// `posted` is final, and every reader decides the same.
__device__ bool waitForPost(const OpQueueShared* queue, uint64_t next) {
  while (loadAcquireSystem(&queue->posted) <= next) {
    if (loadAcquireSystem(&queue->abandoned) != 0) return loadAcquireSystem(&queue->posted) <= next;
    __nanosleep(128);
  }
  return false;
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
    if (threadIdx.x == 0) abandoned = waitForPost(queue, next);
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

// A variant of opWorker, chosen by TUTTI_DEVICE_WORKER=lean while GPUs
// measure it (cuda-kernels-bench's workerFixedCost, and the collectives):
// GPU run 9 took 367 us for eight 1 MiB ops on 33 blocks and 199 on 16,
// where each block's first thread reads the host's queue over the bus and
// fences system-wide once an op. Here one thread reads the host's queue and
// hands each op to the other blocks through device memory, and one system
// fence an op covers the grid's writes (the others' gpu-scope releases,
// acquired through the barrier, come before it). If a GPU shows it cheaper,
// it becomes the default.
// The queue's scratch is this mailbox for either kernel: opWorker uses its
// first word as its barrier's counter.
struct LeanMailbox {
  unsigned long long arrivals;  // the grid barrier's counter (opWorker's too)
  unsigned long long handed;    // ops handed to the grid, over every launch
  uint64_t op[sizeof(QueuedOp) / sizeof(uint64_t)];
  uint64_t abandoned;
};

__device__ void storeReleaseGpu(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
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
  gridBarrier(&box->arrivals, /*systemFence=*/false);
  if (reader && threadIdx.x == 0) storeReleaseSystem(&queue->started, loadAcquireSystem(&queue->started) + 1);
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (;;) {
    if (reader) {
      if (threadIdx.x == 0) abandoned = waitForPost(queue, next);
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
    gridBarrier(&box->arrivals, /*systemFence=*/false);
    if (reader && threadIdx.x == 0) {
      __threadfence_system();
      storeReleaseSystem(&queue->done, ++next);
    }
    if (stop) return;
  }
}

}  // namespace

int launchWorker(void* queue, void* scratch, unsigned blocks, bool lean, void* stream) {
  auto* q = static_cast<OpQueueShared*>(queue);
  auto* box = static_cast<LeanMailbox*>(scratch);
  if (lean)
    opWorkerLean<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(q, box);
  else
    opWorker<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(q, &box->arrivals);
  return cudaGetLastError();
}

size_t workerScratchBytes() { return sizeof(LeanMailbox); }

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

// Loads the worker now (cuda_reduce.h's loadKernels says why).
int loadWorker() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, opWorker);
}

}  // namespace cuda
}  // namespace tutti
