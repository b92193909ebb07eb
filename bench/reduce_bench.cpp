// Host reduction kernels against memcpy of the same bytes, in one run:
// bytes/s counts the two operands read and the result written.
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstring>

#include "kernels/reducer.h"

namespace {

char* buffer(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 1, bytes);
  return static_cast<char*>(p);
}

void BM_Memcpy(benchmark::State& state) {
  size_t bytes = state.range(0);
  char* a = buffer(bytes);
  char* d = buffer(bytes);
  for (auto _ : state) {
    std::memcpy(d, a, bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes * 2);
  munmap(a, bytes);
  munmap(d, bytes);
}

void BM_Reduce(benchmark::State& state, tutti::DataType dtype, tutti::RedOp op) {
  size_t bytes = state.range(0);
  size_t count = bytes / tutti::dtypeSize(dtype);
  char* a = buffer(bytes);
  char* b = buffer(bytes);
  char* d = buffer(bytes);
  const tutti::Reducer& r = tutti::hostReducer();
  state.SetLabel(r.name());
  for (auto _ : state) {
    r.reduce(d, a, b, count, dtype, op, 4);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes * 3);
  munmap(a, bytes);
  munmap(b, bytes);
  munmap(d, bytes);
}

}  // namespace

#define SIZES ->Arg(256 << 10)->Arg(4 << 20)->Arg(64 << 20)
BENCHMARK(BM_Memcpy) SIZES;
BENCHMARK_CAPTURE(BM_Reduce, f32_sum, tutti::DataType::kFloat32, tutti::RedOp::kSum) SIZES;
BENCHMARK_CAPTURE(BM_Reduce, f32_max, tutti::DataType::kFloat32, tutti::RedOp::kMax) SIZES;
BENCHMARK_CAPTURE(BM_Reduce, f64_sum, tutti::DataType::kFloat64, tutti::RedOp::kSum) SIZES;
BENCHMARK_CAPTURE(BM_Reduce, f16_sum, tutti::DataType::kFloat16, tutti::RedOp::kSum) SIZES;
BENCHMARK_CAPTURE(BM_Reduce, bf16_sum, tutti::DataType::kBfloat16, tutti::RedOp::kSum) SIZES;
BENCHMARK_CAPTURE(BM_Reduce, i32_sum, tutti::DataType::kInt32, tutti::RedOp::kSum) SIZES;
BENCHMARK_CAPTURE(BM_Reduce, i8_prod, tutti::DataType::kInt8, tutti::RedOp::kProd) SIZES;
BENCHMARK_CAPTURE(BM_Reduce, f32_avg, tutti::DataType::kFloat32, tutti::RedOp::kAvg) SIZES;

BENCHMARK_MAIN();
