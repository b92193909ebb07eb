#include "src/comm/small_calls/host_block.h"

#include <time.h>

#include "src/common/clock.h"

namespace tutti {

namespace {

constexpr size_t kPageBytes = 4096;
constexpr unsigned kBlockSegmentId = 0xFFFFFFFEu;  // no connection, nor the progress board, has this id

size_t roundUp(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

}  // namespace

HostBlock::HostBlock(int nranks, HostBlockShape shape) : nranks_(nranks), shape_(shape) {}

std::string HostBlock::nameFor(int creatorPid, uint64_t commMagic) {
  return ShmSegment::nameFor(creatorPid, commMagic, 0, kBlockSegmentId);
}

// Header, then every rank's line, then the slot headers, the small slots,
// then (from a page boundary, so a slot's data starts a page) the slots' data.
// (Headers start a 128-byte pair of lines, which cores fetch together.)
size_t HostBlock::headersOffset(int nranks) {
  return roundUp(roundUp(sizeof(Header), 64) + sizeof(RankLine) * nranks, sizeof(SlotHeader));
}

size_t HostBlock::smallOffset(int nranks, HostBlockShape shape) {
  return headersOffset(nranks) + sizeof(SlotHeader) * shape.depth * nranks;
}

size_t HostBlock::slotsOffset(int nranks, HostBlockShape shape) {
  return roundUp(smallOffset(nranks, shape) + kSmallBytes * shape.depth * nranks, kPageBytes);
}

size_t HostBlock::layoutBytes(int nranks, HostBlockShape shape) {
  return slotsOffset(nranks, shape) + shape.slotBytes * shape.dataDepth * nranks;
}

void HostBlock::place() {
  char* base = segment_->slot(0);
  header_ = reinterpret_cast<Header*>(base);
  lines_ = reinterpret_cast<RankLine*>(base + roundUp(sizeof(Header), 64));
  headers_ = reinterpret_cast<SlotHeader*>(base + headersOffset(nranks_));
  small_ = base + smallOffset(nranks_, shape_);
  slots_ = base + slotsOffset(nranks_, shape_);
  bytes_ = layoutBytes(nranks_, shape_);
}

Result<std::unique_ptr<HostBlock>> HostBlock::create(const std::string& name, int nranks, HostBlockShape shape) {
  std::unique_ptr<HostBlock> b(new HostBlock(nranks, shape));
  // The segment comes zeroed: no call yet, nothing done, nobody asleep.
  b->segment_ = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(b->segment_->create(name, layoutBytes(nranks, shape), 1));
  b->place();
  return b;
}

Result<std::unique_ptr<HostBlock>> HostBlock::open(const std::string& name, int nranks, HostBlockShape shape,
                                                   double timeoutSeconds, const std::atomic<bool>* abort) {
  std::unique_ptr<HostBlock> b(new HostBlock(nranks, shape));
  const size_t want = layoutBytes(nranks, shape);
  const Deadline deadline = Deadline::after(timeoutSeconds);
  for (;;) {
    // Until rank 0 has sized it and written its control block, the segment
    // is missing, too small or of another size: look again.
    b->segment_ = std::make_unique<ShmSegment>();
    Status st = b->segment_->open(name);
    if (st.ok() && b->segment_->slotBytes() != want)
      st = InvalidUsage("the host block " + name + " has another layout than this rank expects (" +
                        std::to_string(b->segment_->slotBytes()) + " bytes, not " + std::to_string(want) + ")");
    if (st.ok()) break;
    if (deadline.expired() || (abort && abort->load()))
      return TimeoutError("rank 0 did not make the host block in time: " + st.message());
    timespec ts{0, 50000};
    nanosleep(&ts, nullptr);
  }
  b->place();
  return b;
}

}  // namespace tutti
