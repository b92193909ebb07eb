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
};

// A snapshot: plain values, also what the progress service sends.
struct CallRecord {
  static constexpr int kRecent = 4;  // calls kept, so a difference is found a call or two later
  uint64_t entered = 0;   // sequence number of the last call entered (0: none yet)
  uint64_t finished = 0;  // ... and of the last one that completed
  int32_t collective = -1;  // of the entered call: Collective, DataType, RedOp
  int32_t dtype = 0;
  int32_t op = 0;
  int32_t root = 0;
  uint64_t count = 0;
  int32_t waitPeer = -1;  // the peer it waits on inside the call (-1: none seen)
  int32_t waitIsRecv = 0;
  uint32_t waitStep = 0;  // 1-based step of its program
  uint32_t torn = 0;      // 1: read while a write was cut short (the writer stopped)
  CallSignature recent[kRecent];  // the last calls entered, at sequence % kRecent

  CallSignature signature() const { return {entered, count, collective, dtype, op, root}; }
};

// The published record: a sequence lock, so a reader never mixes two calls.
class SharedCallRecord {
 public:
  // `numbered`: a collective, which every rank calls under this number;
  // sends and receives are not (they keep the last collective's number).
  void enter(uint64_t sequence, int collective, int dtype, int op, int root, uint64_t count, bool numbered = true) {
    begin();
    store(entered_, sequence);
    store(collective_, collective);
    store(dtype_, dtype);
    store(op_, op);
    store(root_, root);
    store(count_, count);
    store(waitPeer_, -1);
    if (!numbered) return end();
    Recent& r = recent_[sequence % CallRecord::kRecent];
    store(r.sequence, sequence);
    store(r.count, count);
    store(r.collective, collective);
    store(r.dtype, dtype);
    store(r.op, op);
    store(r.root, root);
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
    r.entered = entered_.load(std::memory_order_relaxed);
    r.finished = finished_.load(std::memory_order_relaxed);
    r.collective = collective_.load(std::memory_order_relaxed);
    r.dtype = dtype_.load(std::memory_order_relaxed);
    r.op = op_.load(std::memory_order_relaxed);
    r.root = root_.load(std::memory_order_relaxed);
    r.count = count_.load(std::memory_order_relaxed);
    r.waitPeer = waitPeer_.load(std::memory_order_relaxed);
    r.waitIsRecv = waitIsRecv_.load(std::memory_order_relaxed);
    r.waitStep = waitStep_.load(std::memory_order_relaxed);
    for (int i = 0; i < CallRecord::kRecent; ++i) {
      const Recent& c = recent_[i];
      r.recent[i] = {c.sequence.load(std::memory_order_relaxed), c.count.load(std::memory_order_relaxed),
                     c.collective.load(std::memory_order_relaxed), c.dtype.load(std::memory_order_relaxed),
                     c.op.load(std::memory_order_relaxed),         c.root.load(std::memory_order_relaxed)};
    }
    return r;
  }

  struct Recent {
    std::atomic<uint64_t> sequence{0};
    std::atomic<uint64_t> count{0};
    std::atomic<int32_t> collective{-1};
    std::atomic<int32_t> dtype{0};
    std::atomic<int32_t> op{0};
    std::atomic<int32_t> root{0};
  };

  std::atomic<uint32_t> version_{0};
  std::atomic<uint64_t> entered_{0};
  std::atomic<uint64_t> finished_{0};
  std::atomic<int32_t> collective_{-1};
  std::atomic<int32_t> dtype_{0};
  std::atomic<int32_t> op_{0};
  std::atomic<int32_t> root_{0};
  std::atomic<uint64_t> count_{0};
  std::atomic<int32_t> waitPeer_{-1};
  std::atomic<int32_t> waitIsRecv_{0};
  std::atomic<uint32_t> waitStep_{0};
  Recent recent_[CallRecord::kRecent];
};

}  // namespace tutti
