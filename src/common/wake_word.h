// A word in shared memory that processes sleep on until another publishes:
// a futex with a count of sleepers, so that a publisher makes the wake-up
// syscall only when someone sleeps. A process that must watch sockets too
// sleeps in poll() instead, counted as a poller, and the publisher rings its
// doorbell (src/common/doorbell.h).
#pragma once

#include <atomic>
#include <cstdint>

#include "src/common/doorbell.h"

namespace tutti {

struct WakeWord {
  static constexpr int kMaxWords = 64;  // words one sleep may wait on

  std::atomic<uint32_t> wakeups{0};  // the futex word: bumped by every wake-up
  std::atomic<int32_t> sleepers{0};
  std::atomic<int32_t> pollers{0};  // asleep in poll(), on the bell of the word's one waiter
  // The publisher could not reach the waiter's doorbell: do not poll on it.
  std::atomic<uint8_t> bellUnreachable{0};

  // After publishing: wakes the sleepers, if any, and rings `waitersBell`
  // for a poller. No full fence between the publication and the look at the
  // counts: it would cost every publication a store-buffer drain, a
  // cross-core trip while a reader polls the line (2 ranks, 128 KiB
  // all-reduce: 5.2 -> 5.6 us). So a sleeper that began at that instant can
  // miss this wake-up; its sleep's timeout bounds the miss.
  void wakeIfSleeping(DoorbellRinger* waitersBell = nullptr) {
    if (sleepers.load(std::memory_order_relaxed) > 0) wake();
    if (waitersBell && pollers.load(std::memory_order_relaxed) > 0 && !waitersBell->ring())
      bellUnreachable.store(1, std::memory_order_relaxed);
  }
  void wake();
  bool pollable() const { return bellUnreachable.load(std::memory_order_relaxed) == 0; }

  // Sleeps until a wake-up of any of `words` (up to kMaxWords) or
  // `timeoutUs`, unless `ready` holds once this process counts as a sleeper
  // on each.
  template <class Ready>
  static void sleepOnAny(WakeWord* const* words, int count, Ready&& ready, int timeoutUs) {
    uint32_t seen[kMaxWords];
    for (int i = 0; i < count; ++i) {
      words[i]->sleepers.fetch_add(1, std::memory_order_seq_cst);
      seen[i] = words[i]->wakeups.load(std::memory_order_seq_cst);
    }
    if (!ready()) sleep(words, seen, count, timeoutUs);
    for (int i = 0; i < count; ++i) words[i]->sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
  template <class Ready>
  void sleepUnless(Ready&& ready, int timeoutUs) {
    WakeWord* self = this;
    sleepOnAny(&self, 1, ready, timeoutUs);
  }

 private:
  // Until a word's `wakeups` differs from what was `seen` (or a wake-up, a
  // signal, the timeout).
  static void sleep(WakeWord* const* words, const uint32_t* seen, int count, int timeoutUs);
};

}  // namespace tutti
