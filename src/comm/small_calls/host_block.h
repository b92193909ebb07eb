// The host block: one shared segment per communicator whose ranks all live
// on one host, where small calls meet. Each rank owns `depth` slots (a slot
// is where a rank's chunk lands for the others to read where it lies) and a
// `done` word; block call b uses slot b % depth of every rank. A slot's
// header is two cache lines: the call number, the call's tag and a chunk of
// up to kInlineBytes, so an 8-byte call moves one line per rank. Chunks up
// to kSmallBytes lie in small slots as deep as the headers, larger ones in
// the slots' data, `dataDepth` of them a rank (a root runs as far ahead of
// its readers as its chunk's ring is deep: with 16, a 4-rank 128-byte
// broadcast on 2 cores took twice the time of a 64-byte one). The headers
// and the small slots of one call lie side by side, apart from the slots'
// data: every process faults in each page it touches (dear in a VM), and
// this way 64 ranks' small calls touch 32 pages, not 1,024. Waiters spin,
// then sleep on a futex of the rank they wait for, which it wakes only when
// someone sleeps.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "src/common/status.h"
#include "src/common/wake_word.h"
#include "src/plan/plan.h"
#include "transport/shm/segment.h"

namespace tutti {

class HostBlock {
 public:
  // A rank publishes `done` every this many calls, not every call: a store
  // to a line its peers read costs a cache-line trip, paid at the next
  // locked instruction. Less than any depth, so a writer never waits on a
  // reader that finished but has not said so.
  static constexpr int kDoneEvery = 8;

  static constexpr size_t kInlineBytes = 112;  // a 64-byte chunk still fits
  static constexpr size_t kSmallBytes = 1024;  // a small slot: 1 KiB x depth x ranks in all
  struct SlotHeader {
    alignas(128) std::atomic<uint64_t> call;  // the block call whose chunk the slot holds
    uint64_t tag;                            // that call's signature, hashed (written before `call`)
    char chunk[kInlineBytes];                // a chunk that fits here; larger ones lie in the slot's data
  };
  static_assert(sizeof(SlotHeader) == kHostBlockHeaderBytes, "hostBlockShape sizes headers by kHostBlockHeaderBytes");

  // The block's name, as rank 0 (process `creatorPid`) makes it.
  static std::string nameFor(int creatorPid, uint64_t commMagic);
  // Rank 0 makes and maps the block; the others map it (waiting up to
  // `timeoutSeconds` for rank 0 to make it, unless `abort` is set).
  static Result<std::unique_ptr<HostBlock>> create(const std::string& name, int nranks, HostBlockShape shape);
  static Result<std::unique_ptr<HostBlock>> open(const std::string& name, int nranks, HostBlockShape shape,
                                                 double timeoutSeconds, const std::atomic<bool>* abort);
  // Removes the name once every rank has mapped the block.
  void unlink() { segment_->unlink(); }

  size_t slotBytes() const { return shape_.slotBytes; }
  size_t bytes() const { return bytes_; }
  // What one rank's slots and line take of it.
  size_t bytesPerRank() const {
    return (sizeof(SlotHeader) + kSmallBytes) * shape_.depth + shape_.slotBytes * shape_.dataDepth + sizeof(RankLine);
  }
  // How many calls a rank may run ahead of its slowest reader with a chunk
  // this long: its ring's depth. (Rings of one depth or another, a slot was
  // last used depth calls ago or earlier, whatever the calls between.)
  uint64_t reach(size_t chunkBytes) const { return chunkBytes <= kSmallBytes ? shape_.depth : shape_.dataDepth; }
  SlotHeader& slot(int rank, uint64_t call) const {
    return headers_[(call & (shape_.depth - 1)) * static_cast<size_t>(nranks_) + rank];
  }
  // Where `rank`'s chunk of `call` lies, `chunkBytes` long.
  char* data(int rank, uint64_t call, size_t chunkBytes) const {
    if (chunkBytes <= kInlineBytes) return slot(rank, call).chunk;
    if (chunkBytes <= kSmallBytes) return small_ + ((call & (shape_.depth - 1)) * nranks_ + rank) * kSmallBytes;
    return slots_ + (static_cast<size_t>(rank) * shape_.dataDepth + (call & (shape_.dataDepth - 1))) * shape_.slotBytes;
  }
  // Asks for the first lines of `rank`'s slot for `call` (a chunk of
  // `chunkBytes`) in this core's cache, writable: its readers of `depth`
  // calls ago still hold them, and a store that must first take them back
  // costs a cross-core trip when the chunk is published. Issued a call
  // early, that trip overlaps the caller's own work (an 8-byte broadcast of
  // 2 ranks: 0.25-0.32 -> 0.19 us). A hint: it faults nothing in.
  void claimAhead(int rank, uint64_t call, size_t chunkBytes) const {
    const char* header = reinterpret_cast<const char*>(&slot(rank, call));
    prefetchForWrite(header);
    if (chunkBytes > 64 - offsetof(SlotHeader, chunk)) prefetchForWrite(header + 64);  // its second line
    if (chunkBytes <= kInlineBytes) return;
    const char* data = this->data(rank, call, chunkBytes);
    for (size_t at = 0; at < std::min(chunkBytes, kClaimedDataBytes); at += 64) prefetchForWrite(data + at);
  }
  // The last block call `rank` has finished reading every slot of.
  std::atomic<uint64_t>& done(int rank) const { return lines_[rank].done; }
  // A failed rank + 1, set by the first rank of the host to give up on one.
  std::atomic<int32_t>& failureNotice() const { return header_->failureNotice; }

  // After `rank` publishes a slot or a `done`: wakes the ranks asleep on it,
  // if any, and only them (with 64 ranks, waking all on every publication
  // cost thousands of wake-ups a call). Sleeps time out: a wake-up missed
  // (WakeWord::wakeIfSleeping) is a rare late wake, never a lost one.
  void wake(int rank) const { lines_[rank].wake.wakeIfSleeping(); }
  // Every sleeper: a failure notice concerns all.
  void wakeEveryone() const {
    for (int r = 0; r < nranks_; ++r) lines_[r].wake.wake();
  }
  // Sleeps until `rank` publishes or `timeoutUs` passes, unless `ready`
  // already holds once this rank counts as asleep.
  template <class Ready>
  void sleepOn(int rank, Ready&& ready, int timeoutUs) const {
    lines_[rank].wake.sleepUnless(ready, timeoutUs);
  }

 private:
  struct Header {
    alignas(64) std::atomic<int32_t> failureNotice;
  };
  struct RankLine {
    alignas(64) std::atomic<uint64_t> done;
    // Apart from `done`: other ranks write it whenever they sleep.
    alignas(64) WakeWord wake;
  };
  static constexpr size_t kClaimedDataBytes = 1024;  // past it, the copy itself streams

  static void prefetchForWrite(const void* p) {
#if defined(__x86_64__)
    asm volatile("prefetchw %0" ::"m"(*static_cast<const char*>(p)));
#else
    __builtin_prefetch(p, 1);
#endif
  }
  HostBlock(int nranks, HostBlockShape shape);
  static size_t headersOffset(int nranks);
  static size_t smallOffset(int nranks, HostBlockShape shape);
  static size_t slotsOffset(int nranks, HostBlockShape shape);
  static size_t layoutBytes(int nranks, HostBlockShape shape);
  void place();

  std::unique_ptr<ShmSegment> segment_;
  int nranks_;
  HostBlockShape shape_;  // slotBytes a multiple of pages
  size_t bytes_ = 0;
  Header* header_ = nullptr;
  RankLine* lines_ = nullptr;
  SlotHeader* headers_ = nullptr;  // depth x nranks, call-major
  char* small_ = nullptr;          // depth x nranks small slots, call-major
  char* slots_ = nullptr;          // nranks x dataDepth slots' data, page-aligned
};

}  // namespace tutti
