// The thread a communicator's queued work runs on, in the order it was
// queued: a non-blocking communicator's init, calls, split and finalize, and
// every communicator's device-buffer calls (stream gates wait for them).
// It counts the queued work a caller may ask about, so "still in progress"
// is known without waiting.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "src/common/serial_worker.h"

namespace tutti {

class Background {
 public:
  // The thread, started at first use (a blocking communicator's first
  // device call) unless start() made it earlier (a non-blocking one).
  SerialWorker& worker();
  void start() { worker(); }

  // Runs task after everything queued before it; in progress until it returns.
  void post(std::function<void()> task);
  // Work that runs elsewhere but counts as this one's (a child communicator
  // made by its parent's background): in progress from hold() to settle().
  void hold() { pending_.fetch_add(1); }
  void settle() { pending_.fetch_sub(1); }
  bool busy() const { return pending_.load() > 0; }

  // Waits for everything queued so far; at once from the thread itself.
  // Inline: a blocking communicator's host calls ask it every time, and
  // most never started the thread.
  void drain() {
    if (worker_) drainStarted();
  }
  // Runs what is queued (an aborted communicator's calls fail at once), then
  // ends the thread.
  void stop() { worker_.reset(); }

 private:
  void drainStarted();

  std::atomic<int> pending_{0};  // before worker_: its last tasks settle here
  std::unique_ptr<SerialWorker> worker_;
};

}  // namespace tutti
