// Picks the widest instruction set the CPU has and serves the Reducer interface.
#include <atomic>
#include <cstring>

#include "kernels/cpu/reduce_table.h"
#include "kernels/reducer.h"

namespace tutti {

const ReduceTable& reduceTable_generic();
const ReduceTable& reduceTable_avx2();
const ReduceTable& reduceTable_avx512();

namespace {

struct Chosen {
  const ReduceTable* table;
  const char* name;
};

Chosen choose() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c"))
    return {&reduceTable_avx512(), "cpu-avx512"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    return {&reduceTable_avx2(), "cpu-avx2"};
  return {&reduceTable_generic(), "cpu-generic"};
}

const Chosen& chosen() {
  static const Chosen c = choose();
  return c;
}

// A tally for tests (did a device call ask the host reducer?), one per
// chunk. Added without a lock: a locked add waits for the store buffer to
// drain, and after a small call's stores to lines its peers read that is a
// cross-core trip on every call. Threads may lose counts; a count still
// moves past any value a test saw before the call.
std::atomic<uint64_t> gHostCalls{0};
void tally() { gHostCalls.store(gHostCalls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

class HostReducer final : public Reducer {
 public:
  void reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
              int divisor) const override {
    tally();
    chosen().table->reduce[static_cast<int>(dtype)][static_cast<int>(op)](dst, a, b, count, divisor);
  }
  void divide(void* dst, const void* src, size_t count, DataType dtype,
              int divisor) const override {
    tally();
    chosen().table->divide[static_cast<int>(dtype)](dst, src, count, divisor);
  }
  void copy(void* dst, const void* src, size_t bytes) const override {
    tally();
    if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);  // count 0 may come with NULL buffers
  }
  const char* name() const override { return chosen().name; }
};

}  // namespace

const ReduceTable& bestReduceTable() { return *chosen().table; }

uint64_t hostReducerCalls() { return gHostCalls.load(std::memory_order_relaxed); }

const Reducer& hostReducer() {
  static const HostReducer reducer;
  return reducer;
}

}  // namespace tutti
