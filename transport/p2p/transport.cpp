#include "transport/p2p/transport.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>

#include "src/common/clock.h"
#include "transport/p2p/connection.h"

namespace tutti {

namespace {

struct P2pHandle {
  char name[64];        // the control block's shared-memory name
  DeviceIpcHandle ipc;  // the slot ring, for a sender in another process
  uint64_t ring;        // the slot ring, for a sender in this process
  int32_t pid;
  int32_t device;       // the receiver's device (this process's numbering)
  uint64_t slotBytes;
};
static_assert(sizeof(P2pHandle) <= sizeof(ConnectionHandle), "handle too large");

bool sameProcess(const ConnectionSpec& spec) {
  return spec.peer->hostHash == spec.self->hostHash && spec.peer->pid == getpid();
}

// Device memory freed unless handed on.
struct RingGuard {
  DeviceRuntime& rt;
  void* ring;
  ~RingGuard() {
    if (ring) rt.freeDevice(ring);
  }
};

}  // namespace

bool P2pTransport::canConnect(const RankInfo& self, const RankInfo& peer) const {
  if (self.hostHash != peer.hostHash || device_ < 0) return false;
  if (peer.rank < 0 || peer.rank >= static_cast<int>(busIds_.size()) || busIds_[peer.rank].empty())
    return false;
  auto peerDevice = runtime_.deviceByBusId(busIds_[peer.rank]);
  return peerDevice.ok() && runtime_.canAccessPeer(device_, *peerDevice);
}

Result<std::vector<DeviceEvent>> P2pTransport::makeEvents(int n) {
  std::vector<DeviceEvent> events;
  for (int i = 0; i < n; ++i) {
    auto e = runtime_.createEvent();
    if (!e.ok()) {
      for (DeviceEvent made : events) runtime_.destroyEvent(made);
      return e.status();
    }
    events.push_back(*e);
  }
  return events;
}

Result<std::unique_ptr<RecvConnection>> P2pTransport::listen(const ConnectionSpec& spec,
                                                             ConnectionHandle* handle) {
  if (spec.nslots > kShmMaxSlots)
    return InvalidArgument("TUTTI_NSTEPS=" + std::to_string(spec.nslots) +
                           " exceeds the P2P maximum of " + std::to_string(kShmMaxSlots));
  DeviceScope scope(runtime_, device_);  // a group's ranks share the caller's thread
  TUTTI_RETURN_IF_ERROR(scope.status());
  P2pHandle h{};
  snprintf(h.name, sizeof(h.name), "/tutti-p2p-%016" PRIx64 "-%d-%u", spec.commMagic,
           spec.self->rank, spec.connectionId);
  TUTTI_ASSIGN_OR_RETURN(void* ring, runtime_.allocDevice(spec.slotBytes * spec.nslots));
  RingGuard guard{runtime_, ring};
  if (!sameProcess(spec)) {
    TUTTI_ASSIGN_OR_RETURN(h.ipc, runtime_.exportMemory(ring));
  }
  auto segment = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(segment->create(h.name, 0, spec.nslots));
  TUTTI_ASSIGN_OR_RETURN(auto events, makeEvents(spec.nslots));
  h.ring = reinterpret_cast<uint64_t>(ring);
  h.pid = getpid();
  h.device = device_;
  h.slotBytes = spec.slotBytes;
  std::memcpy(handle->bytes, &h, sizeof(h));
  guard.ring = nullptr;  // the connection owns it now
  auto end = std::make_unique<P2pEnd>(runtime_, stream_, std::move(segment), static_cast<char*>(ring),
                                      spec.slotBytes, std::move(events), peerName(spec));
  return std::unique_ptr<RecvConnection>(std::make_unique<P2pRecvConnection>(std::move(end)));
}

Result<std::unique_ptr<SendConnection>> P2pTransport::connect(const ConnectionSpec& spec,
                                                              const ConnectionHandle& handle) {
  DeviceScope scope(runtime_, device_);
  TUTTI_RETURN_IF_ERROR(scope.status());
  P2pHandle h;
  std::memcpy(&h, handle.bytes, sizeof(h));
  auto segment = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(segment->open(h.name));
  char* ring = reinterpret_cast<char*>(h.ring);
  const bool opened = !sameProcess(spec);
  if (opened) {
    auto mapped = runtime_.openMemory(h.ipc);
    if (!mapped.ok())
      return mapped.status().withContext("mapping the device memory of " + peerName(spec) + " (CUDA IPC)");
    ring = static_cast<char*>(*mapped);
  } else if (h.device != device_) {
    TUTTI_RETURN_IF_ERROR(runtime_.enablePeerAccess(h.device));
  }
  auto events = makeEvents(segment->control()->nslots);
  if (!events.ok()) {
    if (opened) runtime_.closeMemory(ring);
    return events.status();
  }
  segment->control()->senderPid.store(getpid(), std::memory_order_release);
  auto end = std::make_unique<P2pEnd>(runtime_, stream_, std::move(segment), ring, h.slotBytes,
                                      std::move(*events), peerName(spec));
  return std::unique_ptr<SendConnection>(std::make_unique<P2pSendConnection>(std::move(end), opened));
}

Status P2pTransport::accept(const ConnectionSpec& spec, RecvConnection& connection) {
  P2pEnd& end = static_cast<P2pRecvConnection&>(connection).end();
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  while (end.control_->senderPid.load(std::memory_order_acquire) == 0) {
    if (spec.abort && spec.abort->load()) return InvalidUsage("aborted during P2P setup");
    if (deadline.expired()) return TimeoutError(peerName(spec) + " never attached to the P2P connection");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  end.segment_->unlink();
  end.peer_.watch(end.control_->senderPid.load(std::memory_order_acquire));
  return Status::Ok();
}

}  // namespace tutti
