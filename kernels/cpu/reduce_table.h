// The table of host reduction functions one instruction set provides.
#pragma once

#include <cstddef>

#include "kernels/dtype.h"

namespace tutti {

// One entry per (dtype, op): dst = a op b, or (a + b) / divisor for avg.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t n, int divisor);
using DivideFn = void (*)(void* dst, const void* src, size_t n, int divisor);

struct ReduceTable {
  ReduceFn reduce[kNumDataTypes][kNumRedOps];
  DivideFn divide[kNumDataTypes];
};

// The widest instruction set's table on this CPU (what hostReducer() runs).
const ReduceTable& bestReduceTable();

}  // namespace tutti
