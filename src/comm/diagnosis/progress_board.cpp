#include "src/comm/diagnosis/progress_board.h"

#include <map>
#include <mutex>
#include <new>
#include <tuple>

#include "transport/shm/segment.h"

namespace tutti {

namespace {

// Every watched record of the process, by communicator, pid and rank:
// several boards (ranks as threads) may watch the same one.
struct Watched {
  std::mutex mutex;
  std::multimap<std::tuple<uint64_t, int, int>, std::shared_ptr<ShmSegment>> records;
};
Watched& watched() {
  static auto* w = new Watched();  // never freed: boards may outlive static destruction
  return *w;
}

const SharedCallRecord* recordIn(const ShmSegment& s) {
  if (s.slotBytes() < sizeof(SharedCallRecord)) return nullptr;
  return reinterpret_cast<const SharedCallRecord*>(s.slot(0));
}

}  // namespace

ProgressBoard::ProgressBoard() = default;

ProgressBoard::~ProgressBoard() {
  if (watched_.empty()) return;
  Watched& w = watched();
  std::lock_guard<std::mutex> lock(w.mutex);
  for (auto it = w.records.begin(); it != w.records.end();) {
    bool mine = false;
    for (const auto& s : watched_) mine = mine || s == it->second;
    it = mine ? w.records.erase(it) : std::next(it);
  }
}

Status ProgressBoard::publish(uint64_t commMagic, int rank) {
  auto segment = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(segment->create(ShmSegment::nameFor(commMagic, rank, kSegmentId), sizeof(SharedCallRecord), 1));
  record_ = new (segment->slot(0)) SharedCallRecord();
  segment_ = std::move(segment);
  commMagic_ = commMagic;
  return Status::Ok();
}

void ProgressBoard::watchHostMates(const std::vector<HostMate>& mates) {
  if (!segment_) return;  // a private record: no names were made
  std::vector<std::pair<HostMate, std::shared_ptr<ShmSegment>>> opened;
  for (const HostMate& m : mates) {
    auto s = std::make_shared<ShmSegment>();
    if (!s->open(ShmSegment::nameFor(m.pid, commMagic_, m.rank, kSegmentId)).ok() || !recordIn(*s)) continue;
    opened.emplace_back(m, s);
    watched_.push_back(s);
  }
  Watched& w = watched();
  std::lock_guard<std::mutex> lock(w.mutex);
  for (auto& [m, s] : opened) w.records.emplace(std::make_tuple(commMagic_, m.pid, m.rank), s);
}

void ProgressBoard::unlinkName() {
  if (segment_) segment_->unlink();
}

bool ProgressBoard::readPeer(int pid, uint64_t commMagic, int rank, CallRecord* out) {
  {
    Watched& w = watched();
    std::lock_guard<std::mutex> lock(w.mutex);  // held while reading: the board cannot unmap meanwhile
    auto it = w.records.find(std::make_tuple(commMagic, pid, rank));
    if (it != w.records.end()) {
      *out = recordIn(*it->second)->read();
      return true;
    }
  }
  ShmSegment segment;  // a communicator still in its init, or one this process is not in
  if (!segment.open(ShmSegment::nameFor(pid, commMagic, rank, kSegmentId)).ok() || !recordIn(segment)) return false;
  *out = recordIn(segment)->read();
  return true;
}

}  // namespace tutti
