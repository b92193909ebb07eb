// Monotonic time, deadlines and the poll-then-yield-then-sleep wait used by
// every loop that waits on another rank.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace tutti {

inline int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Where a long operation's time went: `lap` closes one named phase.
class PhaseClock {
 public:
  PhaseClock() : start_(nowNs()), last_(start_) {}
  void lap(const char* phase) {
    const int64_t now = nowNs();
    char part[64];
    snprintf(part, sizeof(part), "%s%s %.1f", laps_.empty() ? "" : ", ", phase, static_cast<double>(now - last_) / 1e6);
    laps_ += part;
    last_ = now;
  }
  double totalMs() const { return static_cast<double>(last_ - start_) / 1e6; }
  // "bootstrap 1.2, topology 3.4, ..." in milliseconds.
  const std::string& laps() const { return laps_; }

 private:
  int64_t start_, last_;
  std::string laps_;
};

class Deadline {
 public:
  static Deadline after(double seconds) {
    return Deadline(nowNs() + static_cast<int64_t>(seconds * 1e9));
  }
  bool expired() const { return nowNs() >= at_; }
  int64_t atNs() const { return at_; }
  // Milliseconds left, clamped to [0, cap] for poll().
  int remainingMs(int cap = 1000) const {
    int64_t left = (at_ - nowNs()) / 1000000;
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }

 private:
  explicit Deadline(int64_t at) : at_(at) {}
  int64_t at_;
};

// Spins while work is likely to arrive soon, then yields the core (ranks may
// outnumber cores), then sleeps briefly so an idle rank stops burning CPU.
class Backoff {
 public:
  explicit Backoff(int spinCount) : spinCount_(spinCount) {}
  void reset() { idle_ = 0; }
  void pause() {
    ++idle_;
    if (idle_ < spinCount_) {
      __builtin_ia32_pause();
    } else if (idle_ < spinCount_ + 20000) {
      sched_yield();
    } else {
      timespec ts{0, 50000};
      nanosleep(&ts, nullptr);
    }
  }
  // True every 16th idle round: time for slower upkeep than the step at hand.
  bool shouldSweep() const { return (idle_ & 15) == 15; }
  // True every few thousand idle rounds: time to check deadlines and peers.
  bool shouldCheck() const { return (idle_ & 1023) == 1023; }
  // Idle rounds so far (a waiter that polls with syscalls spins fewer).
  int64_t idleRounds() const { return idle_; }
  // Counts an idle round spent elsewhere (e.g. in poll()).
  void countIdle() { ++idle_; }

 private:
  int spinCount_;
  int64_t idle_ = 0;
};

}  // namespace tutti
