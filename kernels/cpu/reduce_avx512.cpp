// The host reduction table built for the avx512 instruction set (flags in CMake).
#define TUTTI_CPU_ISA avx512
#include "kernels/cpu/reduce_kernels.h"

namespace tutti {
const ReduceTable& reduceTable_avx512() {
  static const ReduceTable table = avx512::makeReduceTable();
  return table;
}
}  // namespace tutti
