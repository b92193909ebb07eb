// The latest host collective a communicator ran, kept for
// tuttiCommLastChoice: its shape, its number and whether the host block
// took it. The calling thread writes it (the small calls' path among them:
// a few relaxed stores between two version bumps); any thread may read it,
// and a read that overlaps a write reads again.
#pragma once

#include <atomic>
#include <cstdint>

#include "src/plan/call_planner.h"

namespace tutti {

struct LastCall {
  CallShape shape;
  bool onHostBlock = false;
  uint64_t sequence = 0;  // 0: no collective yet
};

class LastCallRecord {
 public:
  void store(const CallShape& shape, bool onHostBlock, uint64_t sequence) {
    const uint32_t v = version_.load(kRelaxed);
    version_.store(v + 1, kRelaxed);  // odd: being written
    std::atomic_thread_fence(std::memory_order_release);
    collective_.store(static_cast<int32_t>(shape.collective), kRelaxed);
    count_.store(shape.count, kRelaxed);
    elemSize_.store(shape.elemSize, kRelaxed);
    root_.store(shape.root, kRelaxed);
    onHostBlock_.store(onHostBlock, kRelaxed);
    sequence_.store(sequence, kRelaxed);
    version_.store(v + 2, std::memory_order_release);
  }

  LastCall load() const {
    for (;;) {
      const uint32_t before = version_.load(std::memory_order_acquire);
      LastCall last;
      last.shape.collective = static_cast<Collective>(collective_.load(kRelaxed));
      last.shape.count = count_.load(kRelaxed);
      last.shape.elemSize = elemSize_.load(kRelaxed);
      last.shape.root = root_.load(kRelaxed);
      last.onHostBlock = onHostBlock_.load(kRelaxed);
      last.sequence = sequence_.load(kRelaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if ((before & 1) == 0 && version_.load(kRelaxed) == before) return last;
    }
  }

 private:
  static constexpr auto kRelaxed = std::memory_order_relaxed;
  std::atomic<uint32_t> version_{0};
  std::atomic<int32_t> collective_{0};
  std::atomic<size_t> count_{0};
  std::atomic<size_t> elemSize_{0};
  std::atomic<int32_t> root_{0};
  std::atomic<bool> onHostBlock_{false};
  std::atomic<uint64_t> sequence_{0};
};

}  // namespace tutti
