#include "src/comm/progress_board.h"

#include <new>

#include "transport/shm/segment.h"

namespace tutti {

ProgressBoard::ProgressBoard() = default;
ProgressBoard::~ProgressBoard() = default;

Status ProgressBoard::publish(uint64_t commMagic, int rank) {
  auto segment = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(segment->create(ShmSegment::nameFor(commMagic, rank, kSegmentId), sizeof(SharedCallRecord), 1));
  record_ = new (segment->slot(0)) SharedCallRecord();
  segment_ = std::move(segment);
  return Status::Ok();
}

bool ProgressBoard::readPeer(int pid, uint64_t commMagic, int rank, CallRecord* out) {
  ShmSegment segment;
  if (!segment.open(ShmSegment::nameFor(pid, commMagic, rank, kSegmentId)).ok()) return false;
  if (segment.slotBytes() < sizeof(SharedCallRecord)) return false;
  *out = reinterpret_cast<const SharedCallRecord*>(segment.slot(0))->read();
  return true;
}

}  // namespace tutti
