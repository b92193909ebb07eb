// Where a rank publishes its CallRecord for one communicator: a small shared
// segment, so that any process of the host can read it (ProgressService
// answers for remote ranks from here), also while the rank is stopped.
// Host-mates map each other's records during init (watchHostMates), while
// the names exist; each rank then removes its name (unlinkName), so a rank
// killed later leaves nothing in /dev/shm. Without shared memory the record
// stays private and host-mates learn only whether the process runs.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/common/call_record.h"
#include "src/common/status.h"

namespace tutti {

class ShmSegment;

class ProgressBoard {
 public:
  ProgressBoard();
  ~ProgressBoard();

  Status publish(uint64_t commMagic, int rank);
  SharedCallRecord& mine() { return *record_; }

  struct HostMate {
    int pid;
    int rank;
  };
  // Maps the records the host-mates published (every one has, once an
  // all-gather after publish() is done); one that did not is skipped.
  void watchHostMates(const std::vector<HostMate>& mates);
  // Removes this record's name, once every host-mate has it mapped.
  void unlinkName();

  // The record rank `rank` (process `pid` of this host) published for the
  // communicator, from a watched mapping or by its name; false when there
  // is none to read.
  static bool readPeer(int pid, uint64_t commMagic, int rank, CallRecord* out);

 private:
  static constexpr unsigned kSegmentId = 0xFFFFFFFFu;  // no connection has this id
  SharedCallRecord private_;
  std::unique_ptr<ShmSegment> segment_;
  SharedCallRecord* record_ = &private_;
  uint64_t commMagic_ = 0;
  std::vector<std::shared_ptr<ShmSegment>> watched_;  // also listed in the process's registry
};

}  // namespace tutti
