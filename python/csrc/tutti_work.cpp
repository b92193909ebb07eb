#include "tutti_work.h"

namespace tutti_torch {

TuttiWork::TuttiWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

bool TuttiWork::isCompleted() { return future_->completed(); }

bool TuttiWork::isSuccess() const { return future_->completed() && !future_->hasError(); }

std::exception_ptr TuttiWork::exception() const {
  return future_->completed() && future_->hasError() ? future_->exception_ptr() : nullptr;
}

std::vector<at::Tensor> TuttiWork::result() { return outputs_; }

bool TuttiWork::wait(std::chrono::milliseconds /*timeout: the communicator's own bounds it*/) {
  future_->wait();
  if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> TuttiWork::getFuture() { return future_; }

void TuttiWork::complete() { future_->markCompleted(c10::IValue(outputs_)); }

void TuttiWork::fail(std::exception_ptr error) { future_->setError(std::move(error)); }

}  // namespace tutti_torch
