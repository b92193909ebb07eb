// Both ends of a shared-memory connection. The sender and receiver each keep
// a private copy of the other's counter and re-read the shared one only when
// the private copy says there is nothing to do, so an idle poll touches one
// cache line.
#pragma once

#include <memory>
#include <string>

#include "src/common/process_watch.h"
#include "transport/shm/segment.h"
#include "transport/transport.h"

namespace tutti {

// A remote error when the peer process no longer exists or reported a failure.
Status checkShmPeer(const ShmControl& control, const ProcessWatch& peer,
                    const std::string& peerName);
// Records that `failedRank` failed; the first report wins.
void noticeFailure(ShmControl& control, int failedRank);

class ShmSendConnection final : public SendConnection {
 public:
  ShmSendConnection(std::unique_ptr<ShmSegment> segment, std::string peerName);
  void* acquire(size_t* capacity) override;
  Status post(size_t bytes) override;
  Status progress() override { return Status::Ok(); }
  bool flushed() const override { return true; }
  Status checkPeer() override;
  void notifyFailure(int failedRank) override { noticeFailure(*control_, failedRank); }
  int reportedFailure() const override {
    return control_->failureNotice.load(std::memory_order_acquire) - 1;
  }

 private:
  std::unique_ptr<ShmSegment> segment_;
  ShmControl* control_;
  std::string peerName_;
  ProcessWatch peer_;
  uint64_t posted_ = 0;
  uint64_t consumedSeen_ = 0;
  uint32_t nslots_;
  size_t slotBytes_;
};

class ShmRecvConnection final : public RecvConnection {
 public:
  ShmRecvConnection(std::unique_ptr<ShmSegment> segment, std::string peerName);
  const void* peek(size_t* bytes) override;
  Status release() override;
  Status progress() override { return Status::Ok(); }
  Status checkPeer() override;
  void notifyFailure(int failedRank) override { noticeFailure(*control_, failedRank); }
  int reportedFailure() const override {
    return control_->failureNotice.load(std::memory_order_acquire) - 1;
  }
  ShmSegment& segment() { return *segment_; }
  // Starts watching the sender's process once it has attached.
  void watchSender();

 private:
  std::unique_ptr<ShmSegment> segment_;
  ShmControl* control_;
  std::string peerName_;
  ProcessWatch peer_;
  uint64_t consumed_ = 0;
  uint64_t postedSeen_ = 0;
  uint32_t nslots_;
};

}  // namespace tutti
