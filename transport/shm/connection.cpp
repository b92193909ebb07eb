#include "transport/shm/connection.h"


namespace tutti {

Status checkShmPeer(const ShmControl& control, const ProcessWatch& peer,
                    const std::string& peerName) {
  int notice = control.failureNotice.load(std::memory_order_acquire);
  if (notice > 0)
    return RemoteError(peerName + " gave up because rank " + std::to_string(notice - 1) +
                       " failed");
  if (!peer.alive())
    return RemoteError(peerName + " (pid " + std::to_string(peer.pid()) + ") has died");
  return Status::Ok();
}

void noticeFailure(ShmControl& control, int failedRank) {
  int32_t none = 0;
  control.failureNotice.compare_exchange_strong(none, failedRank + 1, std::memory_order_acq_rel);
}

ShmSendConnection::ShmSendConnection(std::unique_ptr<ShmSegment> segment, std::string peerName)
    : segment_(std::move(segment)),
      control_(segment_->control()),
      peerName_(std::move(peerName)),
      nslots_(control_->nslots),
      slotBytes_(control_->slotBytes) {
  peer_.watch(control_->receiverPid);
  posted_ = control_->posted.load(std::memory_order_relaxed);
  consumedSeen_ = control_->consumed.load(std::memory_order_acquire);
}

void* ShmSendConnection::acquire(size_t* capacity) {
  if (posted_ - consumedSeen_ >= nslots_) {
    consumedSeen_ = control_->consumed.load(std::memory_order_acquire);
    if (posted_ - consumedSeen_ >= nslots_) return nullptr;
  }
  *capacity = slotBytes_;
  return segment_->slot(posted_);
}

Status ShmSendConnection::post(size_t bytes) {
  control_->sizes[posted_ % nslots_] = bytes;
  ++posted_;
  control_->posted.store(posted_, std::memory_order_release);
  return Status::Ok();
}

Status ShmSendConnection::checkPeer() {
  return checkShmPeer(*control_, peer_, peerName_);
}

ShmRecvConnection::ShmRecvConnection(std::unique_ptr<ShmSegment> segment, std::string peerName)
    : segment_(std::move(segment)),
      control_(segment_->control()),
      peerName_(std::move(peerName)),
      nslots_(control_->nslots) {}

void ShmRecvConnection::watchSender() {
  peer_.watch(control_->senderPid.load(std::memory_order_acquire));
}

const void* ShmRecvConnection::peek(size_t* bytes) {
  if (consumed_ == postedSeen_) {
    postedSeen_ = control_->posted.load(std::memory_order_acquire);
    if (consumed_ == postedSeen_) return nullptr;
  }
  *bytes = control_->sizes[consumed_ % nslots_];
  return segment_->slot(consumed_);
}

Status ShmRecvConnection::release() {
  ++consumed_;
  control_->consumed.store(consumed_, std::memory_order_release);
  return Status::Ok();
}

Status ShmRecvConnection::checkPeer() {
  return checkShmPeer(*control_, peer_, peerName_);
}

}  // namespace tutti
