#include "transport/p2p/connection.h"

#include "transport/shm/connection.h"

namespace tutti {

P2pEnd::P2pEnd(DeviceRuntime& runtime, DeviceStream stream, std::unique_ptr<ShmSegment> control,
               char* ring, size_t slotBytes, std::vector<DeviceEvent> events, std::string peerName)
    : runtime_(runtime),
      stream_(stream),
      segment_(std::move(control)),
      control_(segment_->control()),
      ring_(ring),
      slotBytes_(slotBytes),
      nslots_(static_cast<uint32_t>(events.size())),
      events_(std::move(events)),
      peerName_(std::move(peerName)) {}

// The owner synchronizes tutti's stream before connections go, so every
// recorded event has been reached.
P2pEnd::~P2pEnd() {
  for (DeviceEvent e : events_) runtime_.destroyEvent(e);
}

Status P2pEnd::record(uint64_t index) { return runtime_.recordInto(events_[index % nslots_], stream_); }

Status P2pEnd::publish(uint64_t recorded, std::atomic<uint64_t>& counter) {
  const uint64_t before = published_;
  while (published_ < recorded) {
    auto done = runtime_.eventDone(events_[published_ % nslots_]);
    if (!done.ok()) {
      if (broken_.ok()) broken_ = done.status().withContext("P2P slot event with " + peerName_);
      return broken_;
    }
    if (!*done) break;
    ++published_;
  }
  if (published_ != before) counter.store(published_, std::memory_order_release);
  return Status::Ok();
}

Status P2pEnd::checkPeer() const {
  if (!broken_.ok()) return broken_;
  return checkShmPeer(*control_, peer_, peerName_);
}

void P2pEnd::notifyFailure(int failedRank) { noticeFailure(*control_, failedRank); }

int P2pEnd::reportedFailure() const {
  return control_->failureNotice.load(std::memory_order_acquire) - 1;
}

P2pSendConnection::P2pSendConnection(std::unique_ptr<P2pEnd> end, bool openedRing)
    : end_(std::move(end)), openedRing_(openedRing) {
  end_->peer_.watch(end_->control_->receiverPid);
}

P2pSendConnection::~P2pSendConnection() {
  if (openedRing_) end_->runtime_.closeMemory(end_->ring_);
}

void* P2pSendConnection::acquire(size_t* capacity) {
  if (posted_ - consumedSeen_ >= end_->nslots_) {
    if (!progress().ok()) return nullptr;  // checkPeer reports it
    consumedSeen_ = end_->control_->consumed.load(std::memory_order_acquire);
    if (posted_ - consumedSeen_ >= end_->nslots_) return nullptr;
  }
  *capacity = end_->slotBytes_;
  return end_->slot(posted_);
}

Status P2pSendConnection::post(size_t bytes) {
  end_->control_->sizes[posted_ % end_->nslots_] = bytes;
  TUTTI_RETURN_IF_ERROR(end_->record(posted_));
  ++posted_;
  return progress();
}

P2pRecvConnection::P2pRecvConnection(std::unique_ptr<P2pEnd> end) : end_(std::move(end)) {}

P2pRecvConnection::~P2pRecvConnection() { end_->runtime_.freeDevice(end_->ring_); }

const void* P2pRecvConnection::peek(size_t* bytes) {
  if (consumed_ == postedSeen_) {
    // Idle: hand back slots whose reads have finished, then look again.
    if (!progress().ok()) return nullptr;  // checkPeer reports it
    postedSeen_ = end_->control_->posted.load(std::memory_order_acquire);
    if (consumed_ == postedSeen_) return nullptr;
  }
  *bytes = end_->control_->sizes[consumed_ % end_->nslots_];
  return end_->slot(consumed_);
}

Status P2pRecvConnection::release() {
  TUTTI_RETURN_IF_ERROR(end_->record(consumed_));
  ++consumed_;
  return progress();
}

}  // namespace tutti
