// Picks the widest instruction set the CPU has and serves the Reducer interface.
#include <cstring>

#include "kernels/cpu/reduce_table.h"
#include "kernels/reducer.h"

namespace tutti {

const ReduceTable& reduceTable_generic();
const ReduceTable& reduceTable_avx2();
const ReduceTable& reduceTable_avx512();

namespace {

class HostReducer final : public Reducer {
 public:
  HostReducer() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c")) {
      table_ = &reduceTable_avx512();
      name_ = "cpu-avx512";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c")) {
      table_ = &reduceTable_avx2();
      name_ = "cpu-avx2";
    } else {
      table_ = &reduceTable_generic();
      name_ = "cpu-generic";
    }
  }
  void reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
              int divisor) const override {
    table_->reduce[static_cast<int>(dtype)][static_cast<int>(op)](dst, a, b, count, divisor);
  }
  void divide(void* dst, const void* src, size_t count, DataType dtype,
              int divisor) const override {
    table_->divide[static_cast<int>(dtype)](dst, src, count, divisor);
  }
  void copy(void* dst, const void* src, size_t bytes) const override {
    if (dst != src) std::memcpy(dst, src, bytes);
  }
  const char* name() const override { return name_; }

 private:
  const ReduceTable* table_;
  const char* name_;
};

}  // namespace

const Reducer& hostReducer() {
  static const HostReducer reducer;
  return reducer;
}

}  // namespace tutti
