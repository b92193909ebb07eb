// Reducer: combines two operands into a destination, element by element.
// The executor calls it with operands wherever they lie (a staging slot, the
// user's buffer) so no extra copy is made for the reduction.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace tutti {

class Reducer {
 public:
  virtual ~Reducer() = default;
  // dst[i] = a[i] op b[i]. For RedOp::kAvg the result is (a[i] + b[i]) / divisor,
  // computed once at the step that produces the final value; partial steps use kSum.
  // dst may alias a or b.
  virtual void reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype,
                      RedOp op, int divisor) const = 0;
  // dst[i] = src[i] / divisor (avg over one rank, or of an already-summed buffer).
  virtual void divide(void* dst, const void* src, size_t count, DataType dtype,
                      int divisor) const = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) const = 0;
  virtual const char* name() const = 0;
};

// The fastest host reducer this CPU supports (AVX-512, AVX2 or portable).
const Reducer& hostReducer();
// How many times hostReducer() was asked to reduce, divide or copy in this
// process: a device call must not ask it at all.
uint64_t hostReducerCalls();

}  // namespace tutti
