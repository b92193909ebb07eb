#include "transport/shm/transport.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include "transport/shm/connection.h"

namespace tutti {

namespace {

struct ShmHandle {
  char name[64];
};
static_assert(sizeof(ShmHandle) <= sizeof(ConnectionHandle), "handle too large");

}  // namespace

// Device calls too: the communicator maps the segment's slots into the device.
bool ShmTransport::canConnect(const RankInfo& self, const RankInfo& peer, Memory) const {
  return self.hostHash == peer.hostHash;
}

Result<std::unique_ptr<RecvConnection>> ShmTransport::listen(const ConnectionSpec& spec,
                                                             ConnectionHandle* handle) {
  if (spec.nslots > kShmMaxSlots)
    return InvalidArgument("TUTTI_NSTEPS=" + std::to_string(spec.nslots) +
                           " exceeds the shared-memory maximum of " + std::to_string(kShmMaxSlots));
  ShmSegment::removeOrphans();
  ShmHandle h{};
  std::string name = ShmSegment::nameFor(spec.commMagic, spec.self->rank, spec.connectionId);
  if (name.size() >= sizeof(h.name)) return InternalError("shared-memory segment name too long: " + name);
  std::memcpy(h.name, name.c_str(), name.size() + 1);
  auto segment = std::make_unique<ShmSegment>();
  TUTTI_RETURN_IF_ERROR(segment->create(h.name, spec.slotBytes, spec.nslots));
  std::memcpy(handle->bytes, &h, sizeof(h));
  ShmSlots slots = ShmSlots::inSegment(*segment);
  return std::unique_ptr<RecvConnection>(
      std::make_unique<ShmRecvConnection>(std::move(segment), std::move(slots), spec));
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
  ShmSlots slots = ShmSlots::inSegment(*segment);
  return std::unique_ptr<SendConnection>(
      std::make_unique<ShmSendConnection>(std::move(segment), std::move(slots), spec));
}

Status ShmTransport::accept(const ConnectionSpec& spec, RecvConnection& connection) {
  return static_cast<ShmRecvConnection&>(connection).awaitSender(spec, "shared-memory");
}

}  // namespace tutti
