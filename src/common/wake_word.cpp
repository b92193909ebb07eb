#include "src/common/wake_word.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "src/common/clock.h"

namespace tutti {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex is a plain 32-bit word");

namespace {

// Shared between processes: no FUTEX_PRIVATE_FLAG. EAGAIN (a wake-up came
// first), EINTR and ETIMEDOUT all send the caller back to look.
long waitOne(std::atomic<uint32_t>& word, uint32_t seen, int timeoutUs) {
  timespec ts{timeoutUs / 1000000, (timeoutUs % 1000000) * 1000L};
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

}  // namespace

void WakeWord::wake() {
  wakeups.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&wakeups), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void WakeWord::sleep(WakeWord* const* words, const uint32_t* seen, int count, int timeoutUs) {
  if (count == 1) {
    waitOne(words[0]->wakeups, seen[0], timeoutUs);
    return;
  }
  futex_waitv waiters[kMaxWords] = {};
  for (int i = 0; i < count; ++i) {
    waiters[i].val = seen[i];
    waiters[i].uaddr = reinterpret_cast<uintptr_t>(&words[i]->wakeups);
    waiters[i].flags = FUTEX_32;
  }
  const int64_t until = nowNs() + timeoutUs * 1000LL;  // futex_waitv takes an absolute time
  timespec at{static_cast<time_t>(until / 1000000000), static_cast<long>(until % 1000000000)};
  if (syscall(SYS_futex_waitv, waiters, count, 0, &at, CLOCK_MONOTONIC) >= 0 || errno != ENOSYS) return;
  // A kernel before 5.16: the first word, briefly, as the others' wake-ups are missed.
  constexpr int kBlindSleepUs = 50;
  waitOne(words[0]->wakeups, seen[0], timeoutUs < kBlindSleepUs ? timeoutUs : kBlindSleepUs);
}

}  // namespace tutti
