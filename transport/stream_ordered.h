// Device calls over any connection: the device's ops (src/device/op_queue.h)
// write outgoing chunks into the connection's slots and read incoming ones
// where they lie, in the order they were queued, while the host thread runs
// ahead. So a slot is posted (or released) only once the device finished
// the ops queued before its mark; until then later chunks take the slots
// after it (acquire and peek `ahead`). Slots in host memory (shm,
// socket, UCX, verbs) are page-locked and mapped into the device's address
// space for the connection's lifetime; slots in device memory (P2P,
// GPUDirect) are used as they are, those a NIC writes flushed before a kernel
// reads them. One wrapper for every transport.
#pragma once

#include <memory>
#include <vector>

#include "src/device/device_runtime.h"
#include "src/device/op_queue.h"
#include "transport/transport.h"

namespace tutti {

// The device's view of a connection's slots, and a mark in the op queue per slot.
class DeviceSlots {
 public:
  static Result<std::unique_ptr<DeviceSlots>> map(DeviceRuntime& runtime, OpQueue& queue,
                                                  const SlotRegion& region, int nslots);
  ~DeviceSlots();
  DeviceSlots(const DeviceSlots&) = delete;
  DeviceSlots& operator=(const DeviceSlots&) = delete;

  // The device address of a host pointer into the slots.
  void* onDevice(const void* hostSlot) const {
    return hostSlot ? deviceBase_ + (static_cast<const char*>(hostSlot) - hostBase_) : nullptr;
  }
  // Slot `index` is free once the ops queued so far are done.
  void record(uint64_t index) { marks_[index % marks_.size()] = queue_.posted(); }
  bool done(uint64_t index) const { return queue_.done() >= marks_[index % marks_.size()]; }
  // A failed flush, kept.
  const Status& broken() const { return broken_; }
  size_t nslots() const { return marks_.size(); }
  // Chunk `index` was received: where a NIC wrote it into device memory,
  // flush its writes to the GPU before a kernel reads it (once a chunk).
  Status arrived(uint64_t index);

 private:
  DeviceSlots(DeviceRuntime& runtime, OpQueue& queue) : runtime_(runtime), queue_(queue) {}
  DeviceRuntime& runtime_;
  OpQueue& queue_;
  char* hostBase_ = nullptr;
  char* deviceBase_ = nullptr;
  bool registered_ = false;
  bool writtenByNic_ = false;
  uint64_t flushed_ = 0;  // chunks whose NIC writes were flushed
  std::vector<uint64_t> marks_;
  Status broken_;
};

class StreamOrderedSend final : public SendConnection {
 public:
  StreamOrderedSend(std::unique_ptr<SendConnection> inner, std::unique_ptr<DeviceSlots> slots)
      : inner_(std::move(inner)), slots_(std::move(slots)), sizes_(slots_->nslots()) {}
  void* acquire(size_t* capacity, uint32_t ahead) override;
  Status post(size_t bytes) override;
  Status progress() override;
  bool flushed() const override { return published_ == posted_ && inner_->flushed(); }
  Status checkPeer() override;
  void notifyFailure(int failedRank) override { inner_->notifyFailure(failedRank); }
  int reportedFailure() const override { return inner_->reportedFailure(); }
  SlotRegion slots() const override { return inner_->slots(); }

 private:
  // Posts, in order, the chunks whose kernels are done.
  Status publish();
  std::unique_ptr<SendConnection> inner_;
  std::unique_ptr<DeviceSlots> slots_;
  std::vector<size_t> sizes_;
  uint64_t posted_ = 0;     // chunks the executor posted (kernels queued)
  uint64_t published_ = 0;  // of them, posted on the inner connection
};

class StreamOrderedRecv final : public RecvConnection {
 public:
  StreamOrderedRecv(std::unique_ptr<RecvConnection> inner, std::unique_ptr<DeviceSlots> slots)
      : inner_(std::move(inner)), slots_(std::move(slots)) {}
  const void* peek(size_t* bytes, uint32_t ahead) override;
  Status release() override;
  Status progress() override;
  Status checkPeer() override;
  void notifyFailure(int failedRank) override { inner_->notifyFailure(failedRank); }
  int reportedFailure() const override { return inner_->reportedFailure(); }
  SlotRegion slots() const override { return inner_->slots(); }

 private:
  // Releases, in order, the slots whose kernels are done.
  Status publish();
  std::unique_ptr<RecvConnection> inner_;
  std::unique_ptr<DeviceSlots> slots_;
  uint64_t consumed_ = 0;  // chunks the executor released (kernels queued)
  uint64_t released_ = 0;  // of them, released on the inner connection
};

}  // namespace tutti
