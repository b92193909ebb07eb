// A communicator's health as callers and peers see it: the abort flag every
// wait polls, the calls in flight (abort waits for them), the first async
// error (tuttiCommGetAsyncError), the last error message, the progress this
// rank publishes for ranks that time out to read, its flight recorder, and
// the ranks it blamed for a failure (tuttiCommShrink may exclude them).
#pragma once

#include <atomic>
#include <mutex>
#include <set>
#include <string>

#include "src/comm/diagnosis/flight_recorder.h"
#include "src/comm/diagnosis/progress_board.h"
#include "src/common/status.h"

namespace tutti {

class CommHealth {
 public:
  std::atomic<bool>& abortFlag() { return abort_; }
  ProgressBoard& progress() { return progress_; }
  FlightRecorder& recorder() { return recorder_; }
  std::atomic<int>& activeCalls() { return activeCalls_; }
  // The first error wins.
  void setAsyncError(Code code) {
    Code expected = Code::kOk;
    asyncError_.compare_exchange_strong(expected, code);
  }
  Code asyncError() const { return asyncError_.load(); }
  void setLastError(const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    lastError_ = message;
  }
  std::string lastError() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return lastError_;
  }
  void blame(int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    blamed_.insert(rank);
  }
  std::set<int> blamed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return blamed_;
  }

 private:
  std::atomic<bool> abort_{false};
  std::atomic<int> activeCalls_{0};
  std::atomic<Code> asyncError_{Code::kOk};
  mutable std::mutex mutex_;
  std::string lastError_;
  std::set<int> blamed_;
  ProgressBoard progress_;
  FlightRecorder recorder_;
};

}  // namespace tutti
