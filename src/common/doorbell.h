// Wakes a rank asleep in poll(). A futex cannot be polled beside sockets, so
// a rank whose waits mix both kinds (several nodes with several ranks each)
// sleeps in poll() on its sockets and its doorbell, and a host-mate that
// moves a counter the rank waits on rings the bell. The bell is a datagram
// socket in the abstract namespace (no file to leave behind), named by
// communicator and rank; what arrives is only a wake-up, read and dropped,
// so a stranger's datagram costs a wake-up at most.
#pragma once

#include <cstdint>
#include <memory>

#include "src/common/status.h"

namespace tutti {

// This rank's bell.
class Doorbell {
 public:
  static Result<std::unique_ptr<Doorbell>> bind(uint64_t magic, int rank);
  ~Doorbell();
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;
  int fd() const { return fd_; }
  // Reads what rang, so the next poll() sleeps.
  void drain() const;

 private:
  explicit Doorbell(int fd) : fd_(fd) {}
  int fd_;
};

// A host-mate's bell, as this rank rings it. Connects at the first ring (the
// host-mate binds its bell before it first sleeps on it); where it cannot
// (a host-mate in another network namespace), ring() returns false from
// then on, the word rung for is marked (WakeWord::pollable), and the
// sleeper's timeout wakes it.
class DoorbellRinger {
 public:
  DoorbellRinger(uint64_t magic, int rank) : magic_(magic), rank_(rank) {}
  ~DoorbellRinger();
  DoorbellRinger(const DoorbellRinger&) = delete;
  DoorbellRinger& operator=(const DoorbellRinger&) = delete;
  // One datagram, never blocking: a full queue wakes the sleeper already.
  // Returns false when the bell cannot be reached.
  bool ring();

 private:
  uint64_t magic_;
  int rank_;
  int fd_ = -1;
  bool unreachable_ = false;
};

}  // namespace tutti
