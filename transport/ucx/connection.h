// Both ends of a UCX connection: tagged messages, one per chunk. The tag
// names the connection and the chunk's sequence number, so chunk s can only
// land in slot s % nslots whatever order UCX completes them in. The receiver
// keeps one receive posted per free slot of its registered ring (UCX's
// rendezvous then writes straight into it); the sender sends from its own
// registered slots or, by reference, from the caller's memory. A second tag
// per direction carries the failure notice.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/common/host_buffer.h"
#include "src/common/process_watch.h"
#include "transport/transport.h"
#include "transport/ucx/worker.h"

namespace tutti {

// Chunk tags: bit 63 clear, bits 62..32 the connection id (unique per
// receiver), bits 31..0 the chunk's sequence number (wrapping).
ucp_tag_t ucxChunkTag(uint32_t connectionId, uint64_t seq);
// Notice tags: bit 63 set, bit 62 the direction (to the receiver or back to
// the sender), then the connection id and the rank that sends the notice (a
// sender's connections to different receivers share ids).
ucp_tag_t ucxNoticeTag(uint32_t connectionId, bool toReceiver, int fromRank);

// What a completed request left behind; UCX's callbacks write it.
struct UcxSlotState {
  void* request = nullptr;  // in flight; the completion callback frees it
  bool done = false;
  size_t length = 0;
  ucs_status_t status = UCS_OK;
};

// State both directions share: the worker, the peer's endpoint, the notice.
class UcxLink {
 public:
  // `sameHostPid`: the peer's process, watched when it shares this host (0: not).
  UcxLink(std::shared_ptr<UcxWorker> worker, UcxPeer* peer, uint32_t connectionId,
          bool receiverSide, int selfRank, int peerRank, int sameHostPid);
  ~UcxLink();
  // Posts the receive for the peer's notice.
  Status armNotice();
  void sendNotice(int failedRank);
  Status check();  // peer failure, peer's process gone, or a notice received
  int reportedFailure() const;
  UcxWorker& worker() { return *worker_; }
  UcxPeer& peer() { return *peer_; }
  const std::string& peerName() const { return peer_->name; }
  uint32_t connectionId() const { return connectionId_; }

 private:
  std::shared_ptr<UcxWorker> worker_;
  UcxPeer* peer_;
  uint32_t connectionId_;
  bool receiverSide_;
  int selfRank_;
  int peerRank_;
  ProcessWatch process_;
  int32_t noticeIn_ = -1;
  int32_t noticeOut_ = -1;
  UcxSlotState noticeState_;  // the peer's notice, received into noticeIn_
  UcxSlotState noticeSent_;
};

// One end's registered slot ring and the state of the request on each slot;
// requests still in flight are cancelled before the memory goes.
struct UcxRing {
  UcxRing(std::unique_ptr<UcxLink> link, HostBuffer slots, UcxRegion region, size_t slotBytes, int nslots);
  UcxRing(UcxRing&&) = default;
  ~UcxRing();
  char* slot(uint64_t seq) const { return slots.data() + (seq % nslots) * slotBytes; }
  UcxSlotState& state(uint64_t seq) { return states[seq % nslots]; }

  std::unique_ptr<UcxLink> link;
  HostBuffer slots;
  UcxRegion region;
  size_t slotBytes;
  uint64_t nslots;
  std::vector<UcxSlotState> states;
};

class UcxSendConnection final : public SendConnection {
 public:
  explicit UcxSendConnection(UcxRing ring) : ring_(std::move(ring)) {}
  void* acquire(size_t* capacity, uint32_t ahead) override;
  Status post(size_t bytes) override;
  bool sendsByReference() const override { return true; }
  Status postReference(const void* data, size_t bytes) override;
  Status progress() override;
  bool flushed() const override { return completed_ == posted_; }
  Status checkPeer() override;
  void notifyFailure(int failedRank) override { ring_.link->sendNotice(failedRank); }
  int reportedFailure() const override { return ring_.link->reportedFailure(); }
  SlotRegion slots() const override { return {ring_.slots.data(), ring_.slots.size(), false}; }

 private:
  Status send(const void* data, size_t bytes, bool fromSlot);
  void retire();  // advances completed_ over finished sends, oldest first

  UcxRing ring_;
  uint64_t posted_ = 0;
  uint64_t completed_ = 0;
  Status error_;
};

class UcxRecvConnection final : public RecvConnection {
 public:
  explicit UcxRecvConnection(UcxRing ring) : ring_(std::move(ring)) {}
  // Posts a receive into every slot and the notice receive.
  Status start();
  const void* peek(size_t* bytes, uint32_t ahead) override;
  Status release() override;
  Status progress() override;
  Status checkPeer() override;
  void notifyFailure(int failedRank) override { ring_.link->sendNotice(failedRank); }
  int reportedFailure() const override { return ring_.link->reportedFailure(); }
  SlotRegion slots() const override { return {ring_.slots.data(), ring_.slots.size(), false}; }

 private:
  Status postReceive(uint64_t seq);

  UcxRing ring_;
  uint64_t consumed_ = 0;
  Status error_;
};

}  // namespace tutti
