// A c10d Work whose completion is a Future: the background queue completes
// it with the output tensors (what DDP's comm hooks read) or an error.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <vector>

namespace tutti_torch {

class TuttiWork : public c10d::Work {
 public:
  TuttiWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override {}
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // The rank a recv from any source took its message from.
  int sourceRank() const override { return source_; }
  void setSource(int rank) { source_ = rank; }

  // Called once, from the background queue.
  void complete();
  void fail(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  int source_ = -1;
};

}  // namespace tutti_torch
