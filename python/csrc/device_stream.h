// CUDA tensors on tutti's stream-ordered device calls: the call goes on the
// caller's current stream (as NCCL's backend does), returns at once, and its
// Work waits by an event recorded after it. Needs a PyTorch built with CUDA
// (setup.py defines TUTTI_TORCH_CUDA); elsewhere CUDA tensors are staged
// through host copies (tensor_map.h).
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

namespace tutti_torch {

// Whether this build hands CUDA tensors to tutti's device calls.
bool deviceCallsBuilt();

// The caller's current stream on `device`.
c10::Stream currentStream(c10::Device device);
// That stream as tutti takes it (a cudaStream_t).
void* streamHandle(const c10::Stream& stream);

}  // namespace tutti_torch
