#include "transport/ibverbs/connection.h"

#include <arpa/inet.h>

#include <cstring>
#include <random>

namespace tutti {

namespace {

// One RDMA write (with immediate when `imm` is set) of [local, local+bytes).
int postWrite(ibv_qp* qp, const void* local, size_t bytes, uint32_t lkey, uint64_t remote, uint32_t rkey,
              const uint32_t* imm) {
  ibv_sge sge{reinterpret_cast<uint64_t>(local), static_cast<uint32_t>(bytes), lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.sg_list = bytes > 0 ? &sge : nullptr;
  wr.num_sge = bytes > 0 ? 1 : 0;
  wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (imm) wr.imm_data = htonl(*imm);
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  return ibv_post_send(qp, &wr, &bad);
}

}  // namespace

// ---- IbLink ----

Result<std::unique_ptr<IbLink>> IbLink::create(IbDevice& device, int nqps, int depth, std::string peerName) {
  std::unique_ptr<IbLink> l(new IbLink(device, std::move(peerName), depth));
  const VerbsApi& api = device.api();
  l->cq_ = api.createCq(device.context(), 2 * nqps * depth, nullptr, nullptr, 0);
  if (!l->cq_) return ErrnoError("creating a completion queue for " + l->peerName_, errno);
  for (int q = 0; q < nqps; ++q) {
    ibv_qp_init_attr init{};
    init.send_cq = l->cq_;
    init.recv_cq = l->cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = static_cast<uint32_t>(depth);
    init.cap.max_recv_wr = static_cast<uint32_t>(depth);
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    ibv_qp* qp = api.createQp(device.pd(), &init);
    if (!qp) return ErrnoError("creating queue pair " + std::to_string(q) + " for " + l->peerName_, errno);
    l->qps_.push_back(qp);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = static_cast<uint8_t>(device.port().port);
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (api.modifyQp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
      return ErrnoError("queue pair to INIT for " + l->peerName_, errno);
  }
  l->psn_ = std::random_device{}() & 0xffffff;
  return l;
}

IbLink::~IbLink() {
  const VerbsApi& api = device_.api();
  for (ibv_qp* qp : qps_) api.destroyQp(qp);
  if (cq_) api.destroyCq(cq_);
}

IbEndpointInfo IbLink::localInfo() const {
  IbEndpointInfo i;
  i.nqps = static_cast<uint8_t>(qps_.size());
  i.ethernet = device_.port().ethernet ? 1 : 0;
  i.mtu = static_cast<uint8_t>(device_.mtu());
  i.lid = device_.lid();
  for (size_t q = 0; q < qps_.size(); ++q) i.qpn[q] = qps_[q]->qp_num;
  i.psn = psn_;
  std::memcpy(i.gid, device_.gid().raw, sizeof(i.gid));
  return i;
}

Status IbLink::connectTo(const IbEndpointInfo& remote) {
  if (remote.nqps != qps_.size())
    return InvalidUsage(peerName_ + " uses " + std::to_string(remote.nqps) + " queue pairs per connection, this rank " +
                        std::to_string(qps_.size()) + " (TUTTI_IB_QPS_PER_CONNECTION must match)");
  if (remote.ethernet != (device_.port().ethernet ? 1 : 0))
    return InvalidUsage(peerName_ + "'s port is " + (remote.ethernet ? "RoCE" : "InfiniBand") + ", this rank's is not");
  const VerbsApi& api = device_.api();
  const IbSettings& s = device_.settings();
  for (size_t q = 0; q < qps_.size(); ++q) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = std::min(device_.mtu(), static_cast<ibv_mtu>(remote.mtu));
    a.dest_qp_num = remote.qpn[q];
    a.rq_psn = remote.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = static_cast<uint8_t>(device_.port().port);
    if (remote.ethernet) {
      a.ah_attr.is_global = 1;
      std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid, sizeof(remote.gid));
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_.gidIndex());
      a.ah_attr.grh.hop_limit = 255;
    } else {
      a.ah_attr.dlid = remote.lid;
    }
    if (api.modifyQp(qps_[q], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
      return ErrnoError("queue pair " + std::to_string(q) + " to RTR for " + peerName_, errno);
    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RTS;
    r.timeout = static_cast<uint8_t>(s.timeout);
    r.retry_cnt = static_cast<uint8_t>(s.retryCount);
    r.rnr_retry = 7;
    r.sq_psn = psn_;
    r.max_rd_atomic = 1;
    if (api.modifyQp(qps_[q], &r, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
      return ErrnoError("queue pair " + std::to_string(q) + " to RTS for " + peerName_, errno);
  }
  return Status::Ok();
}

Status IbLink::checkSocket() {
  if (!socket_.valid()) return Status::Ok();
  char byte;
  auto n = socket_.tryRecv(&byte, 1);
  if (!n.ok()) return RemoteError(peerName_ + " closed its connection (the process is gone)");
  return Status::Ok();
}

Status IbLink::completionError(const ibv_wc& wc, const char* what) const {
  return RemoteError(std::string(what) + " " + peerName_ + " failed on " + device_.port().device + ":" +
                     std::to_string(device_.port().port) + " with completion status " +
                     std::to_string(wc.status) + " (retry exceeded means the peer is unreachable or dead; "
                     "TUTTI_IB_TIMEOUT and TUTTI_IB_RETRY_CNT bound the wait)");
}

// ---- IbSendConnection ----

IbSendConnection::IbSendConnection(std::unique_ptr<IbLink> link, RegisteredBuffer slots,
                                   RegisteredBuffer credit, const IbEndpointInfo& receiver)
    : slots_(std::move(slots)),
      credit_(std::move(credit)),
      link_(std::move(link)),
      remoteRing_(receiver.address),
      remoteKey_(receiver.rkey),
      slotBytes_(receiver.slotBytes),
      window_(receiver.nslots) {}

Status IbSendConnection::waitReady() {
  if (ready_) return Status::Ok();
  char byte = 0;
  TUTTI_ASSIGN_OR_RETURN(size_t n, link_->socket().tryRecv(&byte, 1));
  ready_ = n == 1;
  return Status::Ok();
}

void* IbSendConnection::acquire(size_t* capacity, uint32_t ahead) {
  if (!error_.ok()) return nullptr;
  Status st = waitReady();
  if (!st.ok()) error_ = st;
  const uint64_t index = posted_ + ahead;
  if (!ready_ || !window_.canPost(index, credit()[0])) return nullptr;
  // Credits bound the chunks the receiver holds, not the completions this
  // end has yet to poll: keep room on every send queue for one more chunk
  // and a failure notice.
  if (sendQueueFull(ahead) && (!progress().ok() || sendQueueFull(ahead))) return nullptr;
  *capacity = slotBytes_;
  return slots_.data() + (index % window_.nslots()) * slotBytes_;
}

bool IbSendConnection::sendQueueFull(uint32_t ahead) const {
  // Each chunk takes one request on every queue pair, so they fill alike;
  // chunks acquired ahead will take theirs when posted.
  uint64_t perQueue = (postedWrs_ - completedWrs_) / static_cast<uint64_t>(link_->nqps());
  return perQueue + ahead + 2 > static_cast<uint64_t>(link_->depth());
}

Status IbSendConnection::post(size_t bytes) {
  if (!error_.ok()) return error_;
  const uint64_t slot = posted_ % window_.nslots();
  const char* local = slots_.data() + slot * slotBytes_;
  const uint64_t remote = remoteRing_ + slot * slotBytes_;
  const uint32_t imm = static_cast<uint32_t>(bytes);
  const int nqps = link_->nqps();
  for (int q = 0; q < nqps; ++q) {
    size_t a = stripeStart(bytes, nqps, q), b = stripeStart(bytes, nqps, q + 1);
    if (postWrite(link_->qp(q), local + a, b - a, slots_.key().lkey, remote + a, remoteKey_, &imm) != 0) {
      error_ = ErrnoError("posting an RDMA write to " + link_->peerName(), errno);
      return error_;
    }
    ++postedWrs_;
  }
  ++posted_;
  return Status::Ok();
}

Status IbSendConnection::progress() {
  ibv_wc wc[16];
  int n = ibv_poll_cq(link_->cq(), 16, wc);
  if (n < 0) error_ = SystemError("polling the completion queue for " + link_->peerName());
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS && error_.ok()) error_ = link_->completionError(wc[i], "writing to");
    ++completedWrs_;
  }
  return error_;
}

Status IbSendConnection::checkPeer() {
  if (!error_.ok()) return error_;
  uint64_t notice = credit()[1];
  if (notice > 0)
    return RemoteError(link_->peerName() + " gave up because rank " + std::to_string(notice - 1) + " failed");
  return link_->checkSocket();
}

int IbSendConnection::reportedFailure() const {
  uint64_t notice = credit()[1];
  return notice > 0 ? static_cast<int>(notice - 1) : -1;
}

void IbSendConnection::notifyFailure(int failedRank) {
  if (!ready_ || !error_.ok()) return;
  // A zero-byte write whose immediate says "rank N failed" (best effort).
  uint32_t imm = kNoticeImm | static_cast<uint32_t>(failedRank);
  if (postWrite(link_->qp(0), nullptr, 0, 0, remoteRing_, remoteKey_, &imm) == 0) ++postedWrs_;
}

// ---- IbRecvConnection ----

IbRecvConnection::IbRecvConnection(std::unique_ptr<IbLink> link, RegisteredBuffer slots,
                                   RegisteredBuffer control, size_t slotBytes, int nslots)
    : slots_(std::move(slots)),
      control_(std::move(control)),
      link_(std::move(link)),
      slotBytes_(slotBytes),
      window_(static_cast<uint64_t>(nslots)),
      stripes_(link_->nqps()),
      arrivedOn_(link_->nqps(), 0),
      sizes_(nslots, 0) {}

Status IbRecvConnection::postReceives() {
  // Writes with immediate consume a receive each; they carry no data of their own.
  for (int q = 0; q < link_->nqps(); ++q)
    for (uint64_t i = 0; i < window_.nslots() + 4; ++i) {
      ibv_recv_wr wr{};
      ibv_recv_wr* bad = nullptr;
      wr.wr_id = static_cast<uint64_t>(q);
      if (ibv_post_recv(link_->qp(q), &wr, &bad) != 0)
        return ErrnoError("posting receives for " + link_->peerName(), errno);
    }
  return Status::Ok();
}

Status IbRecvConnection::complete(const IbEndpointInfo& sender) {
  remoteCredit_ = sender.address;
  remoteCreditKey_ = sender.rkey;
  return link_->connectTo(sender);
}

Status IbRecvConnection::poll() {
  ibv_wc wc[16];
  int n = ibv_poll_cq(link_->cq(), 16, wc);
  if (n < 0) return SystemError("polling the completion queue for " + link_->peerName());
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) return link_->completionError(wc[i], "receiving from");
    if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM) continue;  // our own credit writes
    const int q = static_cast<int>(wc[i].wr_id);
    const uint32_t imm = ntohl(wc[i].imm_data);
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = wc[i].wr_id;
    if (ibv_post_recv(link_->qp(q), &wr, &bad) != 0)
      return ErrnoError("reposting a receive for " + link_->peerName(), errno);
    if (isNoticeImm(imm)) {
      if (notice_ < 0) notice_ = static_cast<int>(imm & ~kNoticeImm);
      continue;
    }
    sizes_[arrivedOn_[q] % window_.nslots()] = imm;  // every queue pair carries the whole size
    ++arrivedOn_[q];
    stripes_.arrived(q);
  }
  return Status::Ok();
}

const void* IbRecvConnection::peek(size_t* bytes, uint32_t ahead) {
  const uint64_t index = consumed_ + ahead;
  if (stripes_.complete() <= index) {
    Status st = poll();
    if (!st.ok() && error_.ok()) error_ = st;
    if (stripes_.complete() <= index) return nullptr;
  }
  const uint64_t slot = index % window_.nslots();
  *bytes = sizes_[slot];
  return slots_.data() + slot * slotBytes_;
}

// The word may be rewritten while an earlier write of it is in flight: the
// values only grow (or are a one-time notice), so the sender sees a newer one.
Status IbRecvConnection::writeControl(size_t offset, uint64_t value) {
  uint64_t* word = reinterpret_cast<uint64_t*>(control_.data() + offset);
  *word = value;
  if (postWrite(link_->qp(0), word, sizeof(uint64_t), control_.key().lkey, remoteCredit_ + offset,
                remoteCreditKey_, nullptr) != 0)
    return ErrnoError("returning credits to " + link_->peerName(), errno);
  return Status::Ok();
}

Status IbRecvConnection::release() {
  ++consumed_;
  if (!window_.shouldReturn(consumed_, returned_)) return Status::Ok();
  returned_ = consumed_;
  return writeControl(0, consumed_);
}

Status IbRecvConnection::progress() {
  if (!error_.ok()) return error_;
  Status st = poll();
  if (!st.ok()) error_ = st;
  return error_;
}

Status IbRecvConnection::checkPeer() {
  if (!error_.ok()) return error_;
  if (notice_ >= 0)
    return RemoteError(link_->peerName() + " gave up because rank " + std::to_string(notice_) + " failed");
  return link_->checkSocket();
}

void IbRecvConnection::notifyFailure(int failedRank) {
  if (remoteCredit_ != 0) (void)writeControl(sizeof(uint64_t), static_cast<uint64_t>(failedRank) + 1);
}

}  // namespace tutti
