#include "transport/ucx/connection.h"

#include <cstring>

namespace tutti {

namespace {

constexpr ucp_tag_t kNoticeBit = 1ull << 63;
constexpr ucp_tag_t kToReceiverBit = 1ull << 62;
constexpr ucp_tag_t kFullMask = ~0ull;

void onSent(void* request, ucs_status_t status, void* user) {
  auto* s = static_cast<UcxSlotState*>(user);
  s->status = status;
  s->done = true;
  s->request = nullptr;
  ucp_request_free(request);
}

void onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* s = static_cast<UcxSlotState*>(user);
  s->status = status;
  s->length = status == UCS_OK ? info->length : 0;
  s->done = true;
  s->request = nullptr;
  ucp_request_free(request);
}

// Posts a tagged receive of up to `bytes` into `data`; `state` learns the
// outcome from the callback, which runs even when a message already waits
// (immediate completion is refused: its length report is not reliable here).
Status postTagRecv(ucp_worker_h worker, void* data, size_t bytes, ucp_tag_t tag, ucp_mem_h memh,
                   UcxSlotState* state) {
  *state = UcxSlotState{};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = onReceived;
  p.user_data = state;
  p.datatype = ucp_dt_make_contig(1);
  if (memh) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = memh;
  }
  void* r = ucp_tag_recv_nbx(worker, data, bytes, tag, kFullMask, &p);
  if (UCS_PTR_IS_ERR(r)) return ucxError("posting a receive", UCS_PTR_STATUS(r));
  if (!state->done) state->request = r;  // else the callback ran (and freed it) already
  return Status::Ok();
}

// Cancels every request still in flight and waits for their callbacks, so
// nothing writes into `states` after it is gone. False if some never ended.
bool cancelAll(UcxWorker& w, std::vector<UcxSlotState*> states) {
  for (UcxSlotState* s : states)
    if (s->request) ucp_request_cancel(w.worker(), s->request);
  for (int i = 0; i < 100000; ++i) {
    bool pending = false;
    for (UcxSlotState* s : states) pending |= s->request != nullptr;
    if (!pending) return true;
    ucp_worker_progress(w.worker());
  }
  return false;
}

}  // namespace

ucp_tag_t ucxChunkTag(uint32_t connectionId, uint64_t seq) {
  return (static_cast<ucp_tag_t>(connectionId & 0x7fffffffu) << 32) | (seq & 0xffffffffull);
}

ucp_tag_t ucxNoticeTag(uint32_t connectionId, bool toReceiver, int fromRank) {
  return kNoticeBit | (toReceiver ? kToReceiverBit : 0) |
         (static_cast<ucp_tag_t>(connectionId & 0x3fffffffu) << 32) | static_cast<uint32_t>(fromRank);
}

// ---- UcxLink ----

UcxLink::UcxLink(std::shared_ptr<UcxWorker> worker, UcxPeer* peer, uint32_t connectionId,
                 bool receiverSide, int selfRank, int peerRank, int sameHostPid)
    : worker_(std::move(worker)),
      peer_(peer),
      connectionId_(connectionId),
      receiverSide_(receiverSide),
      selfRank_(selfRank),
      peerRank_(peerRank) {
  if (sameHostPid > 0) process_.watch(sameHostPid);
}

UcxLink::~UcxLink() {
  std::lock_guard<std::mutex> guard(worker_->lock());
  cancelAll(*worker_, {&noticeState_, &noticeSent_});
}

Status UcxLink::armNotice() {
  std::lock_guard<std::mutex> guard(worker_->lock());
  // The receiver listens for the sender's notice and the other way round.
  return postTagRecv(worker_->worker(), &noticeIn_, sizeof(noticeIn_),
                     ucxNoticeTag(connectionId_, receiverSide_, peerRank_), nullptr, &noticeState_);
}

void UcxLink::sendNotice(int failedRank) {
  std::lock_guard<std::mutex> guard(worker_->lock());
  if (peer_->failure != UCS_OK || noticeSent_.request) return;
  noticeOut_ = failedRank;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = onSent;
  p.user_data = &noticeSent_;
  noticeSent_ = UcxSlotState{};
  void* r = ucp_tag_send_nbx(peer_->ep, &noticeOut_, sizeof(noticeOut_),
                             ucxNoticeTag(connectionId_, !receiverSide_, selfRank_), &p);
  if (!UCS_PTR_IS_PTR(r)) return;  // sent at once, or failed: best effort either way
  noticeSent_.request = r;
  // Give it a moment to leave: this rank is about to give up.
  for (int i = 0; i < 10000 && noticeSent_.request; ++i) worker_->progressLocked();
}

Status UcxLink::check() {
  if (noticeState_.done && noticeState_.status == UCS_OK)
    return RemoteError(peerName() + " gave up because rank " + std::to_string(noticeIn_) + " failed");
  if (peer_->failure != UCS_OK) return ucxError(peerName() + " failed", peer_->failure);
  if (process_.pid() > 0 && !process_.alive())
    return RemoteError(peerName() + " (pid " + std::to_string(process_.pid()) + ") has died");
  return Status::Ok();
}

int UcxLink::reportedFailure() const {
  return noticeState_.done && noticeState_.status == UCS_OK ? noticeIn_ : -1;
}

// ---- UcxRing ----

UcxRing::UcxRing(std::unique_ptr<UcxLink> link_, HostBuffer slots_, UcxRegion region_, size_t slotBytes_,
                 int nslots_)
    : link(std::move(link_)),
      slots(std::move(slots_)),
      region(std::move(region_)),
      slotBytes(slotBytes_),
      nslots(static_cast<uint64_t>(nslots_)),
      states(nslots_) {}

UcxRing::~UcxRing() {
  if (!link) return;  // moved from
  std::lock_guard<std::mutex> guard(link->worker().lock());
  std::vector<UcxSlotState*> pending;
  for (auto& s : states) pending.push_back(&s);
  if (!cancelAll(link->worker(), pending)) {
    // A request UCX would not give back may still touch the slots and its
    // state: keep both rather than free them under it.
    (void)slots.release();
    new std::vector<UcxSlotState>(std::move(states));
  }
}

// ---- UcxSendConnection ----

void UcxSendConnection::retire() {
  while (completed_ < posted_) {
    UcxSlotState& s = ring_.state(completed_);
    if (!s.done) break;
    if (s.status != UCS_OK && error_.ok())
      error_ = ucxError("sending to " + ring_.link->peerName(), s.status);
    ++completed_;
  }
}

void* UcxSendConnection::acquire(size_t* capacity, uint32_t ahead) {
  const uint64_t index = posted_ + ahead;
  if (index - completed_ >= ring_.nslots) {
    std::lock_guard<std::mutex> guard(ring_.link->worker().lock());
    ring_.link->worker().progressLocked();
    retire();
    if (index - completed_ >= ring_.nslots) return nullptr;
  }
  *capacity = ring_.slotBytes;
  return ring_.slot(index);
}

Status UcxSendConnection::post(size_t bytes) {
  return send(ring_.slot(posted_), bytes, true);
}

Status UcxSendConnection::postReference(const void* data, size_t bytes) {
  return send(data, bytes, false);
}

Status UcxSendConnection::send(const void* data, size_t bytes, bool fromSlot) {
  if (!error_.ok()) return error_;
  std::lock_guard<std::mutex> guard(ring_.link->worker().lock());
  UcxSlotState& s = ring_.state(posted_);
  s = UcxSlotState{};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
  p.cb.send = onSent;
  p.user_data = &s;
  p.datatype = ucp_dt_make_contig(1);
  if (fromSlot && ring_.region.handle()) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = ring_.region.handle();
  }
  // The caller's memory is registered by UCX's own registration cache.
  void* r = ucp_tag_send_nbx(ring_.link->peer().ep, data, bytes,
                             ucxChunkTag(ring_.link->connectionId(), posted_), &p);
  if (UCS_PTR_IS_ERR(r)) {
    error_ = ucxError("sending to " + ring_.link->peerName(), UCS_PTR_STATUS(r));
    return error_;
  }
  if (r == nullptr) s.done = true;
  else s.request = r;
  ++posted_;
  retire();
  return Status::Ok();
}

Status UcxSendConnection::progress() {
  std::lock_guard<std::mutex> guard(ring_.link->worker().lock());
  ring_.link->worker().progressLocked();
  retire();
  return error_;
}

Status UcxSendConnection::checkPeer() {
  if (!error_.ok()) return error_;
  return ring_.link->check();
}

// ---- UcxRecvConnection ----

Status UcxRecvConnection::start() {
  {
    std::lock_guard<std::mutex> guard(ring_.link->worker().lock());
    for (uint64_t seq = 0; seq < ring_.nslots; ++seq) TUTTI_RETURN_IF_ERROR(postReceive(seq));
  }
  return ring_.link->armNotice();
}

Status UcxRecvConnection::postReceive(uint64_t seq) {
  return postTagRecv(ring_.link->worker().worker(), ring_.slot(seq), ring_.slotBytes,
                     ucxChunkTag(ring_.link->connectionId(), seq), ring_.region.handle(), &ring_.state(seq));
}

const void* UcxRecvConnection::peek(size_t* bytes, uint32_t ahead) {
  const uint64_t index = consumed_ + ahead;  // its receive is posted: ahead < nslots
  UcxSlotState& s = ring_.state(index);
  if (!s.done) {
    std::lock_guard<std::mutex> guard(ring_.link->worker().lock());
    ring_.link->worker().progressLocked();
    if (!s.done) return nullptr;
  }
  if (s.status != UCS_OK) {
    if (error_.ok()) error_ = ucxError("receiving from " + ring_.link->peerName(), s.status);
    return nullptr;
  }
  *bytes = s.length;
  return ring_.slot(index);
}

Status UcxRecvConnection::release() {
  std::lock_guard<std::mutex> guard(ring_.link->worker().lock());
  ++consumed_;
  // The slot just freed takes the chunk nslots ahead.
  return postReceive(consumed_ + ring_.nslots - 1);
}

Status UcxRecvConnection::progress() {
  std::lock_guard<std::mutex> guard(ring_.link->worker().lock());
  ring_.link->worker().progressLocked();
  return error_;
}

Status UcxRecvConnection::checkPeer() {
  if (!error_.ok()) return error_;
  return ring_.link->check();
}

}  // namespace tutti
