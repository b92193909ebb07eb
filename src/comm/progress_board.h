// Where a rank publishes its CallRecord for one communicator: a small shared
// segment named after its pid, the communicator and its rank, so that any
// process of the host that knows those three can read it (ProgressService
// answers for remote ranks from here). Without shared memory the record
// stays private and host-mates learn only whether the process runs.
#pragma once

#include <cstdint>
#include <memory>

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

  // The record rank `rank` (process `pid` of this host) published for the
  // communicator; false when there is none to read.
  static bool readPeer(int pid, uint64_t commMagic, int rank, CallRecord* out);

 private:
  static constexpr unsigned kSegmentId = 0xFFFFFFFFu;  // no connection has this id
  SharedCallRecord private_;
  std::unique_ptr<ShmSegment> segment_;
  SharedCallRecord* record_ = &private_;
};

}  // namespace tutti
