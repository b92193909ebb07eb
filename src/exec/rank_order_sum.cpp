#include "src/exec/rank_order_sum.h"

#include <algorithm>

namespace tutti {

void sumInRankOrder(const Reducer& reducer, const void* const* operands, size_t ranks, char* partial, char* out,
                    size_t count, DataType dtype, RedOp op, int divisor) {
  constexpr size_t kTileBytes = 16 << 10;
  alignas(64) static thread_local char tileBuffer[kTileBytes];
  const bool host = partial == nullptr;
  const size_t es = dtypeSize(dtype);
  const size_t tile = host && ranks > 2 ? kTileBytes / es : count;  // two: straight to the output
  const RedOp partialOp = op == RedOp::kAvg ? RedOp::kSum : op;  // avg divides once, at the end
  for (size_t t = 0; t < count; t += tile) {
    const size_t m = std::min(tile, count - t);
    char* const sum = host ? tileBuffer : partial + t * es;
    const char* acc = static_cast<const char*>(operands[0]) + t * es;
    for (size_t j = 1; j < ranks; ++j) {
      const bool last = j == ranks - 1;
      char* dst = last ? out + t * es : sum;
      reducer.reduce(dst, acc, static_cast<const char*>(operands[j]) + t * es, m, dtype, last ? op : partialOp,
                     divisor);
      acc = dst;
    }
  }
}

}  // namespace tutti
