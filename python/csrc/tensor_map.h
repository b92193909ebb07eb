// How tensors meet tutti: dtypes and ops mapped to tutti's, and tensors that
// tutti cannot read in place (CUDA, or not contiguous) staged through a
// contiguous host copy.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

#include "tutti/tutti.h"

namespace tutti_torch {

tuttiDataType_t tuttiType(at::ScalarType type);

// The tutti op for `op` on `type` (bool sums as max, as NCCL's backend does).
// Bitwise and pre-multiplied ops have no tutti op: callers handle them first.
tuttiRedOp_t tuttiOp(const c10d::ReduceOp& op, at::ScalarType type);
bool isBitwise(const c10d::ReduceOp& op);

// A host, contiguous view of a user tensor; `host` is the tensor itself when
// it already is one.
struct Staged {
  at::Tensor user;
  at::Tensor host;
};
// Copies in the caller's thread: a CUDA tensor is read on its current stream.
Staged stage(const at::Tensor& tensor);
// Copies the host result back when it was a copy.
void unstage(const Staged& staged);

// The one tensor of a single-device call.
const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* call);

}  // namespace tutti_torch
