// out = ((x0 op x1) op x2) op ..., every element combined in rank order:
// what TUTTI_DETERMINISTIC promises, and what a user can compute alone.
#pragma once

#include <cstddef>

#include "kernels/dtype.h"
#include "kernels/reducer.h"

namespace tutti {

// `operands` holds each rank's `count` elements (at least two ranks). On the
// host (`partial` null) the sum goes tile by tile through a buffer that stays
// in cache: each operand is read once and the output written once, and an
// output that is also an operand is written only after its tile was read. A
// device accumulates in `partial` (the call's scratch), a kernel per operand.
// Avg divides by `divisor` once, at the last operand.
void sumInRankOrder(const Reducer& reducer, const void* const* operands, size_t ranks, char* partial, char* out,
                    size_t count, DataType dtype, RedOp op, int divisor);

}  // namespace tutti
