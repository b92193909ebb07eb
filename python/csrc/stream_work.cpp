#include "stream_work.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "device_stream.h"

namespace tutti_torch {

// The communicator's asynchronous error as an exception naming the rank, or nullptr.
static std::exception_ptr asyncErrorOf(tuttiComm_t comm, int rank) {
  tuttiResult_t async = tuttiSuccess;
  if (tuttiCommGetAsyncError(comm, &async) != tuttiSuccess || async == tuttiSuccess || async == tuttiInProgress)
    return nullptr;
  return std::make_exception_ptr(std::runtime_error(std::string("tutti backend, rank ") + std::to_string(rank) +
                                                    ": a call on CUDA tensors failed (" +
                                                    tuttiGetErrorString(async) + "): " + tuttiGetLastError(comm)));
}

StreamWork::StreamWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, c10::Device device,
                       c10::Event event, tuttiComm_t comm, tutti::SerialWorker& completions,
                       CompletionPool& finisher)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      device_(device),
      event_(std::make_shared<c10::Event>(std::move(event))),
      comm_(comm),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::vector<c10::Device>{device})) {
  // The future completes once the device is past the call: polled off the
  // caller's thread, in issue order.
  auto future = future_;
  auto event_ptr = event_;
  auto outs = outputs_;
  completions.post([future, event_ptr, outs, comm, rank, &finisher] {
    while (!event_ptr->query()) std::this_thread::sleep_for(std::chrono::microseconds(20));
    auto error = asyncErrorOf(comm, rank);
    finisher.post([future, outs, error] {
      if (error) future->setError(error);
      else future->markCompleted(c10::IValue(outs));
    });
  });
}

std::exception_ptr StreamWork::asyncError() const { return asyncErrorOf(comm_, rank_); }

bool StreamWork::isCompleted() { return event_->query(); }

bool StreamWork::isSuccess() const { return event_->query() && !asyncError(); }

std::exception_ptr StreamWork::exception() const { return asyncError(); }

// As NCCL's backend: the caller's stream waits, the host does not.
void StreamWork::synchronize() { event_->block(currentStream(device_)); }

bool StreamWork::wait(std::chrono::milliseconds) {
  synchronize();
  if (auto error = asyncError()) std::rethrow_exception(error);
  return true;
}

}  // namespace tutti_torch
