#include "src/common/serial_worker.h"

namespace tutti {

SerialWorker::SerialWorker() : thread_([this] { loop(); }) {}

SerialWorker::~SerialWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void SerialWorker::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    ++posted_;
  }
  changed_.notify_all();
}

void SerialWorker::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t target = posted_;
  changed_.wait(lock, [&] { return finished_ >= target; });
}

void SerialWorker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    auto task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    // Its captures go before the lock is taken again: freeing them may wait
    // on anything (a tensor Python let go of takes the GIL), and a thread
    // holding that may be waiting for this lock.
    task = nullptr;
    lock.lock();
    ++finished_;
    changed_.notify_all();
  }
}

}  // namespace tutti
