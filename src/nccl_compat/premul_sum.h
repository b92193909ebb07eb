// ncclRedOpCreatePreMulSum's ops: each rank's input is multiplied by its
// scalar, then summed. tutti has no such op, so the input is scaled into a
// temporary that lives until the call has run, and summed.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "src/nccl_compat/nccl_abi.h"

namespace tutti::nccl {

struct PreMulSum {
  bool live = false;
  int dtype = 0;
  ScalarResidence residence = kScalarHostImmediate;
  std::vector<unsigned char> immediate;  // the scalar's bytes, read at creation
  const void* pointer = nullptr;         // read at each call (kScalarDevice)

  // The factor now, as a double.
  double factor() const;
};

// `count` elements of `dtype` from `input`, each times `factor`.
std::shared_ptr<std::vector<unsigned char>> scaledCopy(const void* input, size_t count, int dtype,
                                                       double factor);

}  // namespace tutti::nccl
