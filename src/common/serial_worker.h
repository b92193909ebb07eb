// Runs posted tasks one at a time, in the order posted, on a thread of its
// own: the background of a non-blocking communicator, where calls must still
// complete in the order the caller made them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tutti {

class SerialWorker {
 public:
  SerialWorker();
  // Runs what is still queued, then joins.
  ~SerialWorker();
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  void post(std::function<void()> task);
  // Returns once every task posted before the call has run.
  void drain();
  bool onWorkerThread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  uint64_t posted_ = 0;
  uint64_t finished_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tutti
