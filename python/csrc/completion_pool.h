// Completes Works' futures off the threads that run the calls. A future's
// callbacks run on the thread that completes it, and a callback may issue a
// call and wait for it (PowerSGD's hook does): on the queue's thread that
// wait would be for the queue itself. Each task here runs on an idle thread
// of the pool, or on a new one when none is idle, so a callback that waits
// never holds back the completion it waits for. Threads stay until the pool
// goes: as many as callbacks ever waited at once, plus one.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tutti_torch {

class CompletionPool {
 public:
  CompletionPool() = default;
  // Runs what was posted, then joins.
  ~CompletionPool();
  CompletionPool(const CompletionPool&) = delete;
  CompletionPool& operator=(const CompletionPool&) = delete;

  void post(std::function<void()> task);
  // Returns once nothing posted is queued or running.
  void drain();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable quiet_;  // signalled when the last running task ends
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  // Threads waiting with no task meant for them, and tasks posted for a
  // waiting thread that no thread has woken for yet.
  size_t idle_ = 0;
  size_t claims_ = 0;
  size_t running_ = 0;
  bool stopping_ = false;
};

}  // namespace tutti_torch
