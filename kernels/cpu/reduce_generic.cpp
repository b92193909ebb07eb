// The host reduction table built for the generic instruction set (flags in CMake).
#define TUTTI_CPU_ISA generic
#include "kernels/cpu/reduce_kernels.h"

namespace tutti {
const ReduceTable& reduceTable_generic() {
  static const ReduceTable table = generic::makeReduceTable();
  return table;
}
}  // namespace tutti
