#include "transport/stream_ordered.h"

namespace tutti {

Result<std::unique_ptr<DeviceSlots>> DeviceSlots::map(DeviceRuntime& runtime, OpQueue& queue,
                                                      const SlotRegion& region, int nslots) {
  std::unique_ptr<DeviceSlots> s(new DeviceSlots(runtime, queue));
  s->hostBase_ = s->deviceBase_ = static_cast<char*>(region.base);
  s->writtenByNic_ = region.writtenByNic;
  if (!region.onDevice && region.bytes > 0) {
    auto mapped = runtime.registerHost(region.base, region.bytes);
    if (!mapped.ok()) return mapped.status().withContext("mapping a connection's slots into the device");
    s->deviceBase_ = static_cast<char*>(*mapped);
    s->registered_ = true;
  }
  s->marks_.assign(static_cast<size_t>(nslots), 0);
  return s;
}

// The owner synchronizes the stream before connections go, so no op still
// uses the slots.
DeviceSlots::~DeviceSlots() {
  if (registered_) runtime_.unregisterHost(hostBase_);
}

Status DeviceSlots::arrived(uint64_t index) {
  if (!writtenByNic_ || index < flushed_) return Status::Ok();
  Status st = runtime_.flushRemoteWrites();
  if (!st.ok()) {
    if (broken_.ok()) broken_ = st.withContext("flushing a NIC's writes to the device");
    return st;
  }
  flushed_ = index + 1;
  return st;
}

// Nothing to hand out: chunks the device is done with go on first (a
// failure shows in checkPeer), then one more look.
void* StreamOrderedSend::acquire(size_t* capacity, uint32_t ahead) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint64_t pending = posted_ - published_ + ahead;
    void* slot = pending < slots_->nslots() ? inner_->acquire(capacity, static_cast<uint32_t>(pending)) : nullptr;
    if (slot) return slots_->onDevice(slot);
    if (attempt == 0 && !progress().ok()) break;
  }
  return nullptr;
}

Status StreamOrderedSend::post(size_t bytes) {
  sizes_[posted_ % sizes_.size()] = bytes;
  slots_->record(posted_);
  ++posted_;
  return publish();
}

Status StreamOrderedSend::publish() {
  while (published_ < posted_ && slots_->done(published_)) {
    TUTTI_RETURN_IF_ERROR(inner_->post(sizes_[published_ % sizes_.size()]));
    ++published_;
  }
  return slots_->broken();
}

Status StreamOrderedSend::progress() {
  TUTTI_RETURN_IF_ERROR(publish());
  return inner_->progress();
}

Status StreamOrderedSend::checkPeer() {
  TUTTI_RETURN_IF_ERROR(slots_->broken());
  return inner_->checkPeer();
}

// Released slots let the sender go on while this end waits for its next chunk.
const void* StreamOrderedRecv::peek(size_t* bytes, uint32_t ahead) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint64_t pending = consumed_ - released_ + ahead;
    const void* slot = pending < slots_->nslots() ? inner_->peek(bytes, static_cast<uint32_t>(pending)) : nullptr;
    if (slot && slots_->arrived(consumed_ + ahead).ok()) return slots_->onDevice(slot);
    if (slot) return nullptr;  // the flush failed: checkPeer says so
    if (attempt == 0 && !progress().ok()) break;
  }
  return nullptr;
}

Status StreamOrderedRecv::release() {
  slots_->record(consumed_);
  ++consumed_;
  return publish();
}

Status StreamOrderedRecv::publish() {
  while (released_ < consumed_ && slots_->done(released_)) {
    TUTTI_RETURN_IF_ERROR(inner_->release());
    ++released_;
  }
  return slots_->broken();
}

Status StreamOrderedRecv::progress() {
  TUTTI_RETURN_IF_ERROR(publish());
  return inner_->progress();
}

Status StreamOrderedRecv::checkPeer() {
  TUTTI_RETURN_IF_ERROR(slots_->broken());
  return inner_->checkPeer();
}

}  // namespace tutti
