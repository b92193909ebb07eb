// Both ends of a shared-memory connection. The sender and receiver each keep
// a private copy of the other's counter and re-read the shared one only when
// the private copy says there is nothing to do, so an idle poll touches one
// cache line. The counters live in a shared segment's control block; the
// slots in that segment (host memory) or anywhere else both ends can address
// (the P2P transport's ring in device memory). An end that has waited long
// sleeps on its counter's wake word, and the other end wakes it after moving
// the counter (WakeWord: a rare wake-up missed costs the sleep's timeout), or
// rings its doorbell when it sleeps in poll() on sockets too.
#pragma once

#include <functional>
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

// Where one end's slots are, and what to do with them when the end closes.
struct ShmSlots {
  char* base = nullptr;
  size_t slotBytes = 0;
  bool onDevice = false;
  std::function<void()> close;  // frees or unmaps a ring that is not the segment's
  // The segment's own slots.
  static ShmSlots inSegment(const ShmSegment& segment) {
    return {segment.slot(0), segment.slotBytes(), false, nullptr};
  }
};

class ShmSendConnection final : public SendConnection {
 public:
  ShmSendConnection(std::unique_ptr<ShmSegment> segment, ShmSlots slots, const ConnectionSpec& spec);
  ~ShmSendConnection() override;
  void* acquire(size_t* capacity, uint32_t ahead) override;
  Status post(size_t bytes) override;
  Status progress() override { return Status::Ok(); }
  bool flushed() const override { return true; }
  WakeWord* wakeWord() override { return &control_->consumedWake; }
  bool peerMoved() const override {
    return control_->consumed.load(std::memory_order_acquire) != consumedSeen_;
  }
  Status checkPeer() override;
  void notifyFailure(int failedRank) override { noticeFailure(*control_, failedRank); }
  int reportedFailure() const override {
    return control_->failureNotice.load(std::memory_order_acquire) - 1;
  }
  SlotRegion slots() const override { return {slots_.base, slots_.slotBytes * nslots_, slots_.onDevice}; }

 private:
  std::unique_ptr<ShmSegment> segment_;
  ShmControl* control_;
  ShmSlots slots_;
  std::string peerName_;
  DoorbellRinger peerBell_;  // wakes the peer asleep in poll()
  ProcessWatch peer_;
  uint64_t posted_ = 0;
  uint64_t consumedSeen_ = 0;
  uint32_t nslots_;
};

class ShmRecvConnection final : public RecvConnection {
 public:
  ShmRecvConnection(std::unique_ptr<ShmSegment> segment, ShmSlots slots, const ConnectionSpec& spec);
  ~ShmRecvConnection() override;
  const void* peek(size_t* bytes, uint32_t ahead) override;
  Status release() override;
  Status progress() override { return Status::Ok(); }
  WakeWord* wakeWord() override { return &control_->postedWake; }
  bool peerMoved() const override {
    return control_->posted.load(std::memory_order_acquire) != postedSeen_;
  }
  Status checkPeer() override;
  void notifyFailure(int failedRank) override { noticeFailure(*control_, failedRank); }
  int reportedFailure() const override {
    return control_->failureNotice.load(std::memory_order_acquire) - 1;
  }
  SlotRegion slots() const override { return {slots_.base, slots_.slotBytes * nslots_, slots_.onDevice}; }
  ShmSegment& segment() { return *segment_; }
  // Waits (bounded, abortable) for the sender to attach, then removes the
  // segment's name and watches the sender's process.
  Status awaitSender(const ConnectionSpec& spec, const char* what);

 private:
  std::unique_ptr<ShmSegment> segment_;
  ShmControl* control_;
  ShmSlots slots_;
  std::string peerName_;
  DoorbellRinger peerBell_;  // wakes the peer asleep in poll()
  ProcessWatch peer_;
  uint64_t consumed_ = 0;
  uint64_t postedSeen_ = 0;
  uint32_t nslots_;
};

}  // namespace tutti
