#include "transport/socket/transport.h"

#include <cstring>

#include "src/bootstrap/unique_id.h"
#include "src/common/log.h"
#include "transport/socket/connection.h"

namespace tutti {

namespace {

struct SocketHandle {
  WireAddress address;
  uint64_t magic;
  uint32_t connectionId;
};
static_assert(sizeof(SocketHandle) <= sizeof(ConnectionHandle), "handle too large");

struct Hello {
  uint64_t magic;
  uint32_t connectionId;
  int32_t senderRank;
};

std::string peerName(const ConnectionSpec& spec) {
  return "rank " + std::to_string(spec.peer->rank) + " (" + spec.peer->hostname + ")";
}

}  // namespace

Result<std::unique_ptr<SocketTransport>> SocketTransport::create(const NetInterface& iface) {
  std::unique_ptr<SocketTransport> t(new SocketTransport());
  t->iface_ = iface;
  TUTTI_ASSIGN_OR_RETURN(t->listener_, Socket::listen(iface.address));
  return t;
}

Result<std::unique_ptr<RecvConnection>> SocketTransport::listen(const ConnectionSpec& spec,
                                                                ConnectionHandle* handle) {
  SocketHandle h{toWire(listener_.boundAddress()), spec.commMagic, spec.connectionId};
  std::memcpy(handle->bytes, &h, sizeof(h));
  TUTTI_ASSIGN_OR_RETURN(HostBuffer slots, HostBuffer::allocate(spec.slotBytes * spec.nslots));
  return std::unique_ptr<RecvConnection>(std::make_unique<SocketRecvConnection>(
      std::move(slots), spec.slotBytes, spec.nslots, peerName(spec)));
}

Result<std::unique_ptr<SendConnection>> SocketTransport::connect(const ConnectionSpec& spec,
                                                                 const ConnectionHandle& handle) {
  SocketHandle h;
  std::memcpy(&h, handle.bytes, sizeof(h));
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  SocketAddress addr = fromWire(h.address);
  auto s = Socket::connect(addr, deadline, spec.abort);
  if (!s.ok()) return s.status().withContext("socket transport: connecting to " + peerName(spec));
  Hello hello{h.magic, h.connectionId, spec.self->rank};
  TUTTI_RETURN_IF_ERROR(s->sendAll(&hello, sizeof(hello), deadline, spec.abort));
  TUTTI_ASSIGN_OR_RETURN(HostBuffer slots, HostBuffer::allocate(spec.slotBytes * spec.nslots));
  return std::unique_ptr<SendConnection>(std::make_unique<SocketSendConnection>(
      std::move(s.value()), std::move(slots), spec.slotBytes, spec.nslots, peerName(spec)));
}

Status SocketTransport::accept(const ConnectionSpec& spec, RecvConnection& connection) {
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  while (early_.find(spec.connectionId) == early_.end()) {
    auto accepted = listener_.accept(deadline, spec.abort);
    if (!accepted.ok())
      return accepted.status().withContext("socket transport: waiting for " + peerName(spec) +
                                           " to connect");
    Hello hello{};
    Status st = accepted->recvAll(&hello, sizeof(hello), Deadline::after(5), spec.abort);
    if (!st.ok() || hello.magic != spec.commMagic) {
      TUTTI_WARN(kSubsysNet, "dropped a connection from %s: %s",
                 accepted->peerAddress().toString().c_str(),
                 st.ok() ? "wrong magic" : st.message().c_str());
      continue;
    }
    early_.emplace(hello.connectionId, std::move(accepted.value()));
  }
  auto it = early_.find(spec.connectionId);
  static_cast<SocketRecvConnection&>(connection).attach(std::move(it->second));
  early_.erase(it);
  return Status::Ok();
}

}  // namespace tutti
