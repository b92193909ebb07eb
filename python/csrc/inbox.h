// The receiving side of point_to_point.h: the recvs this rank has posted,
// and one channel (a two-rank tutti communicator and a thread) from each
// rank that has sent to it. Each channel reads a message's envelope, matches
// it to the oldest posted recv for that source, or for any source, with that
// tag, and reads the message into it.
//
// Held by a shared pointer its threads share, so that a channel whose sender
// neither closes nor dies by the time the group goes can be left to end on
// its own (it owns its communicator) rather than aborted under its feet.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace tutti_torch {

// What precedes every message; bytes < 0 says the sender is done.
struct Envelope {
  int64_t tag;
  int64_t bytes;
};
constexpr int64_t kCloseEnvelope = -1;

// The group's store keys of the channel from src to dst, and of the list of
// senders that announced themselves to dst.
std::string channelKey(int src, int dst);
std::string announceKey(int dst);

class Inbox : public std::enable_shared_from_this<Inbox> {
 public:
  static constexpr int kAnySource = -1;
  // The source rank and the error, if any.
  using Done = std::function<void(int peer, std::exception_ptr error)>;

  // A posted recv that no message meets within `timeout` fails.
  Inbox(c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout);

  void post(const at::Tensor& buffer, int src, int tag, Done done);
  // Fails what is still posted and stops listening; then waits until
  // `deadline` for each sender's close (a stopping inbox reads and drops what
  // nobody takes). A channel still open then is left to end by itself.
  void close(std::chrono::steady_clock::time_point deadline);

 private:
  struct Posted {
    at::Tensor buffer;
    int src;
    int tag;
    Done done;
    std::chrono::steady_clock::time_point deadline;
  };
  struct Channel {
    std::thread thread;
    bool ended = false;
    std::exception_ptr error;  // why it ended, for later recvs from it
  };

  void listen();
  // Fails the posted recvs whose deadline has passed.
  void expire();
  void receiveFrom(int src);
  // Waits for the oldest posted recv that takes (src, tag); false once the
  // inbox is closing and nobody will post one.
  bool takeMatch(int src, int tag, Posted* match);
  void endChannel(int src, std::exception_ptr error);
  std::string where(int peer) const;

  const c10::intrusive_ptr<c10d::Store> store_;
  const int rank_, size_;
  const std::chrono::milliseconds timeout_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Posted> posted_;
  std::map<int, Channel> channels_;
  bool closing_ = false;
  std::thread listener_;
};

}  // namespace tutti_torch
