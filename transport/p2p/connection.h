// Both ends of a P2P connection. Slots are device memory in the receiver's
// GPU; the counters are host shared memory (transport/shm's control block).
// post() and release() record an event per slot on tutti's device stream;
// the counter moves once the event is done, which the host learns by
// querying, never by waiting.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/common/process_watch.h"
#include "src/device/device_runtime.h"
#include "transport/shm/segment.h"
#include "transport/transport.h"

namespace tutti {

// The pieces both ends share: the control block, the slot ring, one event
// per slot, and what is published so far.
class P2pEnd {
 public:
  P2pEnd(DeviceRuntime& runtime, DeviceStream stream, std::unique_ptr<ShmSegment> control,
         char* ring, size_t slotBytes, std::vector<DeviceEvent> events, std::string peerName);
  ~P2pEnd();
  P2pEnd(const P2pEnd&) = delete;
  P2pEnd& operator=(const P2pEnd&) = delete;

  char* slot(uint64_t index) const { return ring_ + (index % nslots_) * slotBytes_; }
  // Records slot `index`'s event: its chunk is written (sender) or read (receiver).
  Status record(uint64_t index);
  // Advances `counter` (posted or consumed) over every recorded slot whose
  // event is done, up to `recorded`. A failed query is kept for checkPeer,
  // so a caller that can only say "not yet" (acquire, peek) still reports it.
  Status publish(uint64_t recorded, std::atomic<uint64_t>& counter);
  Status checkPeer() const;
  void notifyFailure(int failedRank);
  int reportedFailure() const;

  DeviceRuntime& runtime_;
  DeviceStream stream_;
  std::unique_ptr<ShmSegment> segment_;
  ShmControl* control_;
  char* ring_;
  size_t slotBytes_;
  uint32_t nslots_;
  std::vector<DeviceEvent> events_;
  std::string peerName_;
  ProcessWatch peer_;
  uint64_t published_ = 0;
  Status broken_;  // the first failed event query
};

class P2pSendConnection final : public SendConnection {
 public:
  // `openedRing`: the ring was mapped through IPC and is unmapped on close.
  P2pSendConnection(std::unique_ptr<P2pEnd> end, bool openedRing);
  ~P2pSendConnection() override;
  void* acquire(size_t* capacity) override;
  Status post(size_t bytes) override;
  Status progress() override { return end_->publish(posted_, end_->control_->posted); }
  bool flushed() const override { return end_->published_ == posted_; }
  Status checkPeer() override { return end_->checkPeer(); }
  void notifyFailure(int failedRank) override { end_->notifyFailure(failedRank); }
  int reportedFailure() const override { return end_->reportedFailure(); }

 private:
  std::unique_ptr<P2pEnd> end_;
  bool openedRing_;
  uint64_t posted_ = 0;        // chunks posted here (their events may be pending)
  uint64_t consumedSeen_ = 0;  // the receiver's published count, as last read
};

class P2pRecvConnection final : public RecvConnection {
 public:
  explicit P2pRecvConnection(std::unique_ptr<P2pEnd> end);
  ~P2pRecvConnection() override;
  const void* peek(size_t* bytes) override;
  Status release() override;
  Status progress() override { return end_->publish(consumed_, end_->control_->consumed); }
  Status checkPeer() override { return end_->checkPeer(); }
  void notifyFailure(int failedRank) override { end_->notifyFailure(failedRank); }
  int reportedFailure() const override { return end_->reportedFailure(); }
  P2pEnd& end() { return *end_; }

 private:
  std::unique_ptr<P2pEnd> end_;
  uint64_t consumed_ = 0;    // chunks released here (their events may be pending)
  uint64_t postedSeen_ = 0;  // the sender's published count, as last read
};

}  // namespace tutti
