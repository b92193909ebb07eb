// Google Benchmark for the CUDA reduce kernels. Each result reports its
// memory traffic (two reads and one write per element) in bytes/s and, as
// frac_of_copy, that rate over the rate of a device-to-device cudaMemcpy of
// the same buffers measured in the same run (a copy reads and writes each
// byte once): the fraction of the bandwidth the memory system gives.
// workerBench runs the same reduction as ops of the worker kernel that
// device calls use (kernels/op_queue.h), and workerFixedCost what a worker
// costs beside its ops' bytes.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <string>

#include "kernels/cuda/cuda_reduce.h"
#include "kernels/op_queue.h"

namespace {

using tutti::DataType;
using tutti::RedOp;

struct Buffers {
  void *a = nullptr, *b = nullptr, *dst = nullptr;
  cudaEvent_t start, stop;
  explicit Buffers(size_t bytes) {
    cudaMalloc(&a, bytes);
    cudaMalloc(&b, bytes);
    cudaMalloc(&dst, bytes);
    cudaMemset(a, 0, bytes);
    cudaMemset(b, 0, bytes);
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
  }
  ~Buffers() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(dst);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  template <typename F>
  double seconds(F&& launch) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    return ms / 1e3;
  }
};

bool haveGpu(benchmark::State& state) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) return true;
  state.SkipWithError((std::string("no usable GPU: ") +
                       (e == cudaSuccess ? "none visible" : cudaGetErrorString(e))).c_str());
  return false;
}

// Copy bandwidth (read + write bytes per second) per size, measured once.
double copyRate(size_t bytes, Buffers& buf) {
  static std::map<size_t, double> rates;
  auto it = rates.find(bytes);
  if (it != rates.end()) return it->second;
  for (int i = 0; i < 3; ++i) cudaMemcpyAsync(buf.dst, buf.a, bytes, cudaMemcpyDeviceToDevice);
  double best = 1e30;
  for (int i = 0; i < 10; ++i)
    best = std::min(best, buf.seconds([&] { cudaMemcpyAsync(buf.dst, buf.a, bytes, cudaMemcpyDeviceToDevice); }));
  return rates[bytes] = 2.0 * bytes / best;
}

void reduceBench(benchmark::State& state, DataType dtype, RedOp op) {
  if (!haveGpu(state)) return;
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / tutti::dtypeSize(dtype);
  Buffers buf(bytes);
  const double copy = copyRate(bytes, buf);
  for (int i = 0; i < 3; ++i) tutti::cuda::launchReduce(buf.dst, buf.a, buf.b, count, dtype, op, 2, nullptr);
  double total = 0;
  for (auto _ : state) {
    double s = buf.seconds([&] { tutti::cuda::launchReduce(buf.dst, buf.a, buf.b, count, dtype, op, 2, nullptr); });
    state.SetIterationTime(s);
    total += s;
  }
  const double rate = 3.0 * bytes * state.iterations() / total;
  state.SetBytesProcessed(static_cast<int64_t>(3.0 * bytes * state.iterations()));
  state.counters["frac_of_copy"] = rate / copy;
  state.counters["copy_GBps"] = copy / 1e9;
}

void copyKernelBench(benchmark::State& state) {
  if (!haveGpu(state)) return;
  const size_t bytes = static_cast<size_t>(state.range(0));
  Buffers buf(bytes);
  const double copy = copyRate(bytes, buf);
  double total = 0;
  for (auto _ : state) {
    double s = buf.seconds([&] { tutti::cuda::launchCopy(buf.dst, buf.a, bytes, nullptr); });
    state.SetIterationTime(s);
    total += s;
  }
  state.SetBytesProcessed(static_cast<int64_t>(2.0 * bytes * state.iterations()));
  state.counters["frac_of_copy"] = 2.0 * bytes * state.iterations() / total / copy;
}

enum class Worker { kUsed, kLean };  // opWorker, or its one-reader variant

// `ops` float32 sums of `bytes` of `buf` through the op queue on a worker
// of `blocks` blocks, then a stop: the time from the worker's launch to its
// end, each iteration's into the state; returns the total.
double timeWorker(benchmark::State& state, Buffers& buf, size_t bytes, unsigned blocks, int ops,
                  Worker worker = Worker::kUsed) {
  tutti::OpQueueShared* queue = nullptr;
  void* scratch = nullptr;
  cudaHostAlloc(reinterpret_cast<void**>(&queue), sizeof(*queue), cudaHostAllocMapped);
  std::memset(static_cast<void*>(queue), 0, sizeof(*queue));
  const size_t scratchBytes = tutti::cuda::workerScratchBytes();
  cudaMalloc(&scratch, scratchBytes);
  cudaMemset(scratch, 0, scratchBytes);
  void* onDevice = nullptr;
  cudaHostGetDevicePointer(&onDevice, queue, 0);
  uint64_t posted = 0;
  auto post = [&](tutti::QueuedOpKind kind) {
    tutti::QueuedOp op{buf.dst, buf.a, buf.b, bytes / 4, static_cast<uint32_t>(kind),
                       static_cast<int32_t>(DataType::kFloat32), static_cast<int32_t>(RedOp::kSum), 1};
    queue->ops[posted % tutti::kOpQueueSlots] = op;
    __atomic_store_n(&queue->posted, ++posted, __ATOMIC_RELEASE);
  };
  double total = 0;
  for (auto _ : state) {
    double s = buf.seconds([&] {
      tutti::cuda::launchWorker(onDevice, scratch, blocks, worker == Worker::kLean, nullptr);
      for (int i = 0; i < ops; ++i) post(tutti::QueuedOpKind::kReduce);
      post(tutti::QueuedOpKind::kStop);
    });
    state.SetIterationTime(s);
    total += s;
  }
  cudaDeviceSynchronize();
  cudaFree(scratch);
  cudaFreeHost(queue);
  return total;
}

// Eight float32 sums of `bytes` on the grid device calls use: the worker's
// rate for a call's ops, from its launch to its end.
void workerBench(benchmark::State& state) {
  if (!haveGpu(state)) return;
  const size_t bytes = static_cast<size_t>(state.range(0));
  constexpr int kOps = 8;
  Buffers buf(bytes);
  const double copy = copyRate(bytes, buf);
  const unsigned blocks = static_cast<unsigned>(tutti::cuda::workerBlocks(1));
  const double total = timeWorker(state, buf, bytes, blocks, kOps);
  const double rate = 3.0 * bytes * kOps * state.iterations() / total;
  state.SetBytesProcessed(static_cast<int64_t>(3.0 * bytes * kOps * state.iterations()));
  state.counters["frac_of_copy"] = rate / copy;
  state.counters["blocks"] = blocks;
}

// What a worker costs beside its ops' bytes (GPU run 9: 367 us for eight
// 1 MiB sums on 33 blocks, 199 on 16): 4 KiB ops, by grid and op count.
// us_per_op is the time over the ops; 0 ops is the launch and the stop.
// Beside each, the same on the one-reader variant (launchWorker with lean).
void workerFixedCost(benchmark::State& state, Worker worker) {
  if (!haveGpu(state)) return;
  const unsigned blocks = static_cast<unsigned>(state.range(0));
  const int ops = static_cast<int>(state.range(1));
  Buffers buf(4096);
  const double total = timeWorker(state, buf, 4096, blocks, ops, worker);
  const double perCall = total / state.iterations();
  state.counters["us_per_call"] = perCall * 1e6;
  state.counters["us_per_op"] = ops ? perCall * 1e6 / ops : 0;
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t s = 1 << 20; s <= (int64_t{256} << 20); s *= 4) b->Arg(s);
  b->UseManualTime();
}

BENCHMARK_CAPTURE(reduceBench, float32_sum, DataType::kFloat32, RedOp::kSum)->Apply(sizes);
BENCHMARK_CAPTURE(reduceBench, bfloat16_sum, DataType::kBfloat16, RedOp::kSum)->Apply(sizes);
BENCHMARK_CAPTURE(reduceBench, float16_sum, DataType::kFloat16, RedOp::kSum)->Apply(sizes);
BENCHMARK_CAPTURE(reduceBench, float64_sum, DataType::kFloat64, RedOp::kSum)->Apply(sizes);
BENCHMARK_CAPTURE(reduceBench, int32_max, DataType::kInt32, RedOp::kMax)->Apply(sizes);
BENCHMARK_CAPTURE(reduceBench, float32_avg, DataType::kFloat32, RedOp::kAvg)->Apply(sizes);
BENCHMARK(copyKernelBench)->Apply(sizes);
BENCHMARK(workerBench)->Apply(sizes);
BENCHMARK_CAPTURE(workerFixedCost, used, Worker::kUsed)->ArgsProduct({{1, 4, 16, 33, 66}, {0, 1, 8, 32}})->UseManualTime();
BENCHMARK_CAPTURE(workerFixedCost, lean, Worker::kLean)->ArgsProduct({{1, 4, 16, 33, 66}, {0, 1, 8, 32}})->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
