// The host reduction table built for the avx2 instruction set (flags in CMake).
#define TUTTI_CPU_ISA avx2
#include "kernels/cpu/reduce_kernels.h"

namespace tutti {
const ReduceTable& reduceTable_avx2() {
  static const ReduceTable table = avx2::makeReduceTable();
  return table;
}
}  // namespace tutti
