// How tensors meet tutti: dtypes and ops mapped to tutti's, and tensors that
// tutti cannot read in place made contiguous: CUDA tensors stay on their
// device (device_stream.h) where this build has CUDA, and are staged through
// a host copy where it has not.
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

// Where tutti reads a tensor: the tensor itself when it is contiguous and
// tutti can reach its memory, else a contiguous copy (on its device, or on
// the host).
at::Tensor placed(const at::Tensor& tensor);

// A user tensor and the buffer tutti reads and writes for it.
struct Staged {
  at::Tensor user;
  at::Tensor buffer;
};
// Copies in the caller's thread, on the current stream.
Staged stage(const at::Tensor& tensor);
// Copies the result back when it was a copy.
void unstage(const Staged& staged);

// The one tensor of a single-device call.
const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* call);

}  // namespace tutti_torch
