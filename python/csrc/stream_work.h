// The Work of a call on CUDA tensors: tutti queued it on the caller's stream
// and returned; an event recorded after it says when it is done. wait() makes
// the caller's current stream wait for it (the host does not block, as with
// NCCL's backend) and reports the communicator's asynchronous error.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <vector>

#include "completion_pool.h"
#include "src/common/serial_worker.h"
#include "tutti/tutti.h"

namespace tutti_torch {

class StreamWork : public c10d::Work {
 public:
  // `event` is recorded already; `completions` polls it, and `finisher`
  // completes the future once it is done.
  StreamWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, c10::Device device,
             c10::Event event, tuttiComm_t comm, tutti::SerialWorker& completions, CompletionPool& finisher);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  // The communicator's asynchronous error, or nullptr.
  std::exception_ptr asyncError() const;

  std::vector<at::Tensor> outputs_;
  c10::Device device_;
  std::shared_ptr<c10::Event> event_;
  tuttiComm_t comm_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace tutti_torch
