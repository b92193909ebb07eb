// What one rank publishes of its progress on one communicator: the call it
// last entered, the last it finished, and what it waits on. It lives in
// shared memory so that the rank's host-mates can read it even while the
// rank itself is stopped or stuck; only its rank writes it.
#pragma once

#include <atomic>
#include <cstdint>

namespace tutti {

// What a call was: enough to tell two ranks' calls apart.
struct CallSignature {
  uint64_t sequence = 0;  // 0: none
  uint64_t count = 0;
  int32_t collective = -1;
  int32_t dtype = 0;
  int32_t op = 0;
  int32_t root = 0;
  // A nonzero word that differs, but for collisions, between two signatures
  // (a few multiplies: it is made on every small call).
  uint64_t tag() const {
    const uint64_t kinds = static_cast<uint32_t>(collective) | uint64_t{static_cast<uint32_t>(dtype)} << 16 |
                           uint64_t{static_cast<uint32_t>(op)} << 32 | uint64_t{static_cast<uint32_t>(root)} << 40;
    const uint64_t h = sequence * 0x9E3779B97F4A7C15ull ^ count * 0xC2B2AE3D27D4EB4Full ^ kinds * 0x165667B19E3779F9ull;
    return (h ^ h >> 29) | 1;
  }
};

// A CallSignature readable while its one writer changes it: each field is
// atomic, so a reader sees every field whole (a sequence lock or a reader
// that tolerates a mix decides what a mix means).
struct AtomicCallSignature {
  std::atomic<uint64_t> sequence{0};
  std::atomic<uint64_t> count{0};
  std::atomic<int32_t> collective{-1};
  std::atomic<int32_t> dtype{0};
  std::atomic<int32_t> op{0};
  std::atomic<int32_t> root{0};

  void store(const CallSignature& s) {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    sequence.store(s.sequence, kRelaxed);
    count.store(s.count, kRelaxed);
    collective.store(s.collective, kRelaxed);
    dtype.store(s.dtype, kRelaxed);
    op.store(s.op, kRelaxed);
    root.store(s.root, kRelaxed);
  }
  CallSignature load() const {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    return {sequence.load(kRelaxed), count.load(kRelaxed), collective.load(kRelaxed),
            dtype.load(kRelaxed),    op.load(kRelaxed),    root.load(kRelaxed)};
  }
};

// A snapshot: plain values, also what the progress service sends.
struct CallRecord {
  static constexpr int kRecent = 4;  // calls kept, so a difference is found a call or two later
  CallSignature entered;  // the last call entered (sequence 0: none yet)
  uint64_t finished = 0;  // sequence number of the last one that completed
  int32_t waitPeer = -1;  // the peer it waits on inside the call (-1: none seen)
  int32_t waitIsRecv = 0;
  uint32_t waitStep = 0;  // 1-based step of its program
  uint32_t torn = 0;      // 1: read while a write was cut short (the writer stopped)
  CallSignature recent[kRecent];  // the last calls entered, at sequence % kRecent
};

// The published record: a sequence lock, so a reader never mixes two calls.
class SharedCallRecord {
 public:
  // `numbered`: a collective, which every rank calls under this number;
  // sends and receives are not (they keep the last collective's number).
  void enter(const CallSignature& call, bool numbered = true) {
    begin();
    entered_.store(call);
    store(waitPeer_, -1);
    if (numbered) recent_[call.sequence % CallRecord::kRecent].store(call);
    end();
  }
  void finish(uint64_t sequence) {
    begin();
    store(finished_, sequence);
    store(waitPeer_, -1);
    end();
  }
  void waitOn(int peer, bool isRecv, uint32_t step) {
    begin();
    store(waitPeer_, peer);
    store(waitIsRecv_, isRecv ? 1 : 0);
    store(waitStep_, step);
    end();
  }

  CallRecord read() const {
    CallRecord r;
    // A writer stopped mid-write leaves the version odd for good: after a
    // bounded number of tries, take the fields as they are, marked torn.
    for (int attempt = 0; attempt < 10000; ++attempt) {
      const uint32_t v1 = version_.load(std::memory_order_acquire);
      r = fields();
      std::atomic_thread_fence(std::memory_order_acquire);
      if (!(v1 & 1) && version_.load(std::memory_order_relaxed) == v1) return r;
    }
    r.torn = 1;
    return r;
  }

 private:
  template <typename T, typename V>
  static void store(std::atomic<T>& field, V value) { field.store(static_cast<T>(value), std::memory_order_relaxed); }
  void begin() {
    version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  void end() { version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  CallRecord fields() const {
    CallRecord r;
    r.entered = entered_.load();
    r.finished = finished_.load(std::memory_order_relaxed);
    r.waitPeer = waitPeer_.load(std::memory_order_relaxed);
    r.waitIsRecv = waitIsRecv_.load(std::memory_order_relaxed);
    r.waitStep = waitStep_.load(std::memory_order_relaxed);
    for (int i = 0; i < CallRecord::kRecent; ++i) r.recent[i] = recent_[i].load();
    return r;
  }

  std::atomic<uint32_t> version_{0};
  AtomicCallSignature entered_;
  std::atomic<uint64_t> finished_{0};
  std::atomic<int32_t> waitPeer_{-1};
  std::atomic<int32_t> waitIsRecv_{0};
  std::atomic<uint32_t> waitStep_{0};
  AtomicCallSignature recent_[CallRecord::kRecent];
};

}  // namespace tutti
