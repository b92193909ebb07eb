#include "transport/shm/connection.h"

#include <chrono>
#include <thread>

#include "src/common/clock.h"

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

ShmSendConnection::ShmSendConnection(std::unique_ptr<ShmSegment> segment, ShmSlots slots,
                                     const ConnectionSpec& spec)
    : segment_(std::move(segment)),
      control_(segment_->control()),
      slots_(std::move(slots)),
      peerName_(peerName(spec)),
      peerBell_(spec.commMagic, spec.peer->rank),
      nslots_(control_->nslots) {
  peer_.watch(control_->receiverPid);
  posted_ = control_->posted.load(std::memory_order_relaxed);
  consumedSeen_ = control_->consumed.load(std::memory_order_acquire);
}

ShmSendConnection::~ShmSendConnection() {
  if (slots_.close) slots_.close();
}

void* ShmSendConnection::acquire(size_t* capacity, uint32_t ahead) {
  const uint64_t index = posted_ + ahead;
  if (index - consumedSeen_ >= nslots_) {
    consumedSeen_ = control_->consumed.load(std::memory_order_acquire);
    if (index - consumedSeen_ >= nslots_) return nullptr;
  }
  *capacity = slots_.slotBytes;
  return slots_.base + (index % nslots_) * slots_.slotBytes;
}

Status ShmSendConnection::post(size_t bytes) {
  control_->sizes[posted_ % nslots_] = bytes;
  ++posted_;
  control_->posted.store(posted_, std::memory_order_release);
  control_->postedWake.wakeIfSleeping(&peerBell_);
  return Status::Ok();
}

Status ShmSendConnection::checkPeer() {
  return checkShmPeer(*control_, peer_, peerName_);
}

ShmRecvConnection::ShmRecvConnection(std::unique_ptr<ShmSegment> segment, ShmSlots slots,
                                     const ConnectionSpec& spec)
    : segment_(std::move(segment)),
      control_(segment_->control()),
      slots_(std::move(slots)),
      peerName_(peerName(spec)),
      peerBell_(spec.commMagic, spec.peer->rank),
      nslots_(control_->nslots) {}

ShmRecvConnection::~ShmRecvConnection() {
  if (slots_.close) slots_.close();
}

Status ShmRecvConnection::awaitSender(const ConnectionSpec& spec, const char* what) {
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  // The name can go once the sender has mapped the segment.
  while (control_->senderPid.load(std::memory_order_acquire) == 0) {
    if (spec.abort && spec.abort->load()) return InvalidUsage(std::string("aborted during ") + what + " setup");
    if (deadline.expired())
      return TimeoutError(peerName(spec) + " never attached to the " + what + " connection");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  segment_->unlink();
  peer_.watch(control_->senderPid.load(std::memory_order_acquire));
  return Status::Ok();
}

const void* ShmRecvConnection::peek(size_t* bytes, uint32_t ahead) {
  const uint64_t index = consumed_ + ahead;
  if (index >= postedSeen_) {
    postedSeen_ = control_->posted.load(std::memory_order_acquire);
    if (index >= postedSeen_) return nullptr;
  }
  *bytes = control_->sizes[index % nslots_];
  return slots_.base + (index % nslots_) * slots_.slotBytes;
}

Status ShmRecvConnection::release() {
  ++consumed_;
  control_->consumed.store(consumed_, std::memory_order_release);
  control_->consumedWake.wakeIfSleeping(&peerBell_);
  return Status::Ok();
}

Status ShmRecvConnection::checkPeer() {
  return checkShmPeer(*control_, peer_, peerName_);
}

}  // namespace tutti
