// A POSIX shared-memory segment holding one connection's slot ring, and the
// control block at its head.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/common/status.h"
#include "src/common/wake_word.h"

namespace tutti {

constexpr int kShmMaxSlots = 16;

struct ShmControl {
  alignas(64) std::atomic<uint64_t> posted;    // chunks published by the sender
  alignas(64) std::atomic<uint64_t> consumed;  // chunks released by the receiver
  // Where the receiver sleeps until `posted` moves, and the sender until
  // `consumed` does; each on its own line, as each is written by its sleeper.
  alignas(64) WakeWord postedWake;
  alignas(64) WakeWord consumedWake;
  alignas(64) uint64_t sizes[kShmMaxSlots];    // bytes in each slot, written before `posted`
  alignas(64) std::atomic<int32_t> senderPid;  // 0 until the sender has attached
  std::atomic<int32_t> failureNotice;          // failed rank + 1, set by either side
  int32_t receiverPid;
  uint32_t nslots;
  uint64_t slotBytes;
};

class ShmSegment {
 public:
  // A connection's segment name: it carries the creator's pid namespace and
  // pid, so that a segment whose creator died before it could remove the
  // name is known as garbage (removeOrphans).
  static std::string nameFor(uint64_t commMagic, int rank, unsigned connectionId);
  // The same name as process `pid` of this pid namespace made it.
  static std::string nameFor(int pid, uint64_t commMagic, int rank, unsigned connectionId);
  // Removes the segments of creators in this pid namespace that no longer
  // run (killed mid-setup, where no destructor ran). Once per process.
  static void removeOrphans();
  // The same for one creator, process `pid`, if it no longer runs.
  static void removeNamesOfDeadProcess(int pid);

  ShmSegment() = default;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  // Creates, sizes and maps the segment, faulting every page in now so no
  // collective pays for first touch.
  Status create(const std::string& name, size_t slotBytes, int nslots);
  // Maps a peer's segment; refuses one whose size does not match its own
  // control block (so slot() never leaves the mapping).
  Status open(const std::string& name);
  // Removes the name; the mapping stays valid for both sides.
  void unlink();

  ShmControl* control() const { return static_cast<ShmControl*>(base_); }
  size_t slotBytes() const { return slotBytes_; }
  uint32_t nslots() const { return nslots_; }
  char* slot(uint64_t index) const {
    return static_cast<char*>(base_) + kDataOffset + (index % nslots_) * slotBytes_;
  }

 private:
  static constexpr size_t kDataOffset = 4096;
  Status map(int fd, size_t bytes);
  std::string name_;
  bool linked_ = false;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  size_t slotBytes_ = 0;
  uint32_t nslots_ = 1;
};

}  // namespace tutti
