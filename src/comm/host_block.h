// The host block: one shared segment per communicator whose ranks all live
// on one host, where small calls meet. Each rank owns kDepth slots (a slot
// is where a rank's chunk lands for the others to read where it lies) and a
// `done` word; block call b uses slot b % kDepth of every rank. A slot's
// header holds the call number and the call's tag next to its first bytes,
// so an 8-byte call moves one cache line per rank. Waiters spin, then sleep
// on a futex in the block that publishers wake only when someone sleeps.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "src/common/status.h"
#include "transport/shm/segment.h"

namespace tutti {

class HostBlock {
 public:
  static constexpr int kDepth = 16;  // calls a rank may run ahead of the slowest reader (a broadcast's root)
  // A rank publishes `done` every this many calls, not every call: a store
  // to a line its peers read costs a cache-line trip, paid at the next
  // locked instruction. Less than kDepth, so a writer never waits on a
  // reader that finished but has not said so.
  static constexpr int kDoneEvery = 8;

  struct SlotHeader {
    std::atomic<uint64_t> call;  // the block call whose chunk the slot holds
    uint64_t tag;                // that call's signature, hashed (written before `call`)
  };

  // The block's name, as rank 0 (process `creatorPid`) makes it.
  static std::string nameFor(int creatorPid, uint64_t commMagic);
  // Rank 0 makes and maps the block; the others map it (waiting up to
  // `timeoutSeconds` for rank 0 to make it, unless `abort` is set).
  static Result<std::unique_ptr<HostBlock>> create(const std::string& name, int nranks, size_t slotBytes);
  static Result<std::unique_ptr<HostBlock>> open(const std::string& name, int nranks, size_t slotBytes,
                                                 double timeoutSeconds, const std::atomic<bool>* abort);
  // Removes the name once every rank has mapped the block.
  void unlink() { segment_->unlink(); }

  size_t slotBytes() const { return slotBytes_; }
  size_t bytes() const { return bytes_; }
  // What one rank's slots and line take of it.
  size_t bytesPerRank() const { return stride_ * kDepth + 64; }
  SlotHeader& slot(int rank, uint64_t call) const {
    return *reinterpret_cast<SlotHeader*>(slots_ + (static_cast<size_t>(rank) * kDepth + call % kDepth) * stride_);
  }
  char* data(int rank, uint64_t call) const { return reinterpret_cast<char*>(&slot(rank, call)) + sizeof(SlotHeader); }
  // The last block call `rank` has finished reading every slot of.
  std::atomic<uint64_t>& done(int rank) const { return lines_[rank].done; }
  // A failed rank + 1, set by the first rank of the host to give up on one.
  std::atomic<int32_t>& failureNotice() const { return header_->failureNotice; }

  // After publishing a slot or a `done`: wakes the ranks asleep on the block,
  // if any. No fence between the publication and the look at `sleepers`: it
  // would cost every small call a store-buffer drain (a cache-line trip).
  // So a rank that began to sleep at that instant may miss this wake-up,
  // and sleeps are short (kSleepUs): a rare late wake, never a lost one.
  void wake() const {
    if (header_->sleepers.load(std::memory_order_relaxed) > 0) wakeAll();
  }
  // Sleeps until a publication on the block or `timeoutUs`, unless `ready`
  // already holds once this rank counts as asleep.
  template <class Ready>
  void sleep(Ready&& ready, int timeoutUs) const {
    header_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = header_->wakeups.load(std::memory_order_seq_cst);
    if (!ready()) futexWait(seen, timeoutUs);
    header_->sleepers.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  struct Header {
    alignas(64) std::atomic<int32_t> failureNotice;
    alignas(64) std::atomic<uint32_t> wakeups;  // the futex word
    std::atomic<int32_t> sleepers;
  };
  struct RankLine {
    alignas(64) std::atomic<uint64_t> done;
  };
  HostBlock(int nranks, size_t slotBytes);
  static size_t layoutBytes(int nranks, size_t slotBytes);
  void place();
  void wakeAll() const;
  void futexWait(uint32_t seen, int timeoutUs) const;

  std::unique_ptr<ShmSegment> segment_;
  int nranks_;
  size_t slotBytes_;
  size_t stride_;
  size_t bytes_ = 0;
  Header* header_ = nullptr;
  RankLine* lines_ = nullptr;
  char* slots_ = nullptr;
};

}  // namespace tutti
