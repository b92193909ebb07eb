#include "transport/p2p/transport.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "transport/shm/connection.h"

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

bool P2pTransport::canConnect(const RankInfo& self, const RankInfo& peer, Memory memory) const {
  if (memory != Memory::kDevice || self.hostHash != peer.hostHash || device_ < 0) return false;
  if (peer.rank < 0 || peer.rank >= static_cast<int>(busIds_.size()) || busIds_[peer.rank].empty())
    return false;
  auto peerDevice = runtime_.deviceByBusId(busIds_[peer.rank]);
  return peerDevice.ok() && runtime_.canAccessPeer(device_, *peerDevice);
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
  auto control = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(control->create(h.name, 0, spec.nslots));
  h.ring = reinterpret_cast<uint64_t>(ring);
  h.pid = getpid();
  h.device = device_;
  h.slotBytes = spec.slotBytes;
  std::memcpy(handle->bytes, &h, sizeof(h));
  guard.ring = nullptr;  // the connection owns it now
  DeviceRuntime& rt = runtime_;
  ShmSlots slots{static_cast<char*>(ring), spec.slotBytes, true, [&rt, ring] { rt.freeDevice(ring); }};
  return std::unique_ptr<RecvConnection>(
      std::make_unique<ShmRecvConnection>(std::move(control), std::move(slots), spec));
}

Result<std::unique_ptr<SendConnection>> P2pTransport::connect(const ConnectionSpec& spec,
                                                              const ConnectionHandle& handle) {
  DeviceScope scope(runtime_, device_);
  TUTTI_RETURN_IF_ERROR(scope.status());
  P2pHandle h;
  std::memcpy(&h, handle.bytes, sizeof(h));
  h.name[sizeof(h.name) - 1] = '\0';
  if (h.slotBytes != spec.slotBytes)
    return InvalidUsage(peerName(spec) + "'s P2P slots are " + std::to_string(h.slotBytes) +
                        " bytes, this rank's " + std::to_string(spec.slotBytes));
  auto control = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(control->open(h.name));
  ShmSlots slots{reinterpret_cast<char*>(h.ring), spec.slotBytes, true, nullptr};
  if (!sameProcess(spec)) {
    auto mapped = runtime_.openMemory(h.ipc);
    if (!mapped.ok())
      return mapped.status().withContext("mapping the device memory of " + peerName(spec) + " (CUDA IPC)");
    DeviceRuntime& rt = runtime_;
    void* ring = *mapped;
    slots.base = static_cast<char*>(ring);
    slots.close = [&rt, ring] { rt.closeMemory(ring); };
  } else if (h.device != device_) {
    TUTTI_RETURN_IF_ERROR(runtime_.enablePeerAccess(h.device));
  }
  control->control()->senderPid.store(getpid(), std::memory_order_release);
  return std::unique_ptr<SendConnection>(
      std::make_unique<ShmSendConnection>(std::move(control), std::move(slots), spec));
}

Status P2pTransport::accept(const ConnectionSpec& spec, RecvConnection& connection) {
  return static_cast<ShmRecvConnection&>(connection).awaitSender(spec, "P2P");
}

}  // namespace tutti
