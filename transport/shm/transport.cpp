#include "transport/shm/transport.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>

#include "src/common/clock.h"
#include "transport/shm/connection.h"

namespace tutti {

namespace {

struct ShmHandle {
  char name[64];
};
static_assert(sizeof(ShmHandle) <= sizeof(ConnectionHandle), "handle too large");

}  // namespace

bool ShmTransport::canConnect(const RankInfo& self, const RankInfo& peer) const {
  return self.hostHash == peer.hostHash;
}

Result<std::unique_ptr<RecvConnection>> ShmTransport::listen(const ConnectionSpec& spec,
                                                             ConnectionHandle* handle) {
  if (spec.nslots > kShmMaxSlots)
    return InvalidArgument("TUTTI_NSTEPS=" + std::to_string(spec.nslots) +
                           " exceeds the shared-memory maximum of " + std::to_string(kShmMaxSlots));
  ShmHandle h{};
  snprintf(h.name, sizeof(h.name), "/tutti-%016" PRIx64 "-%d-%u", spec.commMagic, spec.self->rank,
           spec.connectionId);
  auto segment = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(segment->create(h.name, spec.slotBytes, spec.nslots));
  std::memcpy(handle->bytes, &h, sizeof(h));
  return std::unique_ptr<RecvConnection>(
      std::make_unique<ShmRecvConnection>(std::move(segment), peerName(spec)));
}

Result<std::unique_ptr<SendConnection>> ShmTransport::connect(const ConnectionSpec& spec,
                                                              const ConnectionHandle& handle) {
  ShmHandle h;
  std::memcpy(&h, handle.bytes, sizeof(h));
  h.name[sizeof(h.name) - 1] = '\0';
  auto segment = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(segment->open(h.name));
  if (segment->slotBytes() != spec.slotBytes || segment->nslots() != static_cast<uint32_t>(spec.nslots))
    return InvalidUsage(peerName(spec) + "'s shared-memory ring has " +
                        std::to_string(segment->nslots()) + " slots of " +
                        std::to_string(segment->slotBytes()) + " bytes, this rank expects " +
                        std::to_string(spec.nslots) + " of " + std::to_string(spec.slotBytes));
  segment->control()->senderPid.store(getpid(), std::memory_order_release);
  return std::unique_ptr<SendConnection>(
      std::make_unique<ShmSendConnection>(std::move(segment), peerName(spec)));
}

Status ShmTransport::accept(const ConnectionSpec& spec, RecvConnection& connection) {
  auto& shm = static_cast<ShmRecvConnection&>(connection);
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  // The name can go once the sender has mapped the segment.
  while (shm.segment().control()->senderPid.load(std::memory_order_acquire) == 0) {
    if (spec.abort && spec.abort->load()) return InvalidUsage("aborted during shm setup");
    if (deadline.expired())
      return TimeoutError(peerName(spec) + " never attached to the shared-memory connection");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  shm.segment().unlink();
  shm.watchSender();
  return Status::Ok();
}

}  // namespace tutti
