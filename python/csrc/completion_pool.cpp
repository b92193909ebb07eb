#include "completion_pool.h"

namespace tutti_torch {

CompletionPool::~CompletionPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void CompletionPool::post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back(std::move(task));
  if (idle_ > 0) {
    --idle_;  // one waiting thread is this task's
    ++claims_;
    wake_.notify_one();
  } else {
    threads_.emplace_back([this] { loop(); });
  }
}

void CompletionPool::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  quiet_.wait(lock, [this] { return tasks_.empty() && running_ == 0; });
}

void CompletionPool::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // A thread that finished a task takes whatever is queued, even a task a
    // waiting thread was woken for: that one then finds nothing and waits
    // again, counted idle again. Idle is never counted while busy.
    while (!tasks_.empty()) {
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      ++running_;
      lock.unlock();
      task();
      task = nullptr;  // what it held goes before the thread waits again
      lock.lock();
      --running_;
    }
    if (running_ == 0) quiet_.notify_all();
    if (stopping_) return;
    ++idle_;
    wake_.wait(lock, [this] { return claims_ > 0 || stopping_; });
    if (claims_ > 0) --claims_;
    else --idle_;  // stopping
  }
}

}  // namespace tutti_torch
