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
  int32_t streams;
};
static_assert(sizeof(SocketHandle) <= sizeof(ConnectionHandle), "handle too large");

struct Hello {
  uint64_t magic;
  uint32_t connectionId;
  int32_t senderRank;
  int32_t stream;
  int32_t streams;
};

}  // namespace

Result<std::unique_ptr<SocketTransport>> SocketTransport::create(const std::vector<NetInterface>& ifaces,
                                                                 SocketStreams streams) {
  if (ifaces.empty()) return InvalidArgument("socket transport: no interface to listen on");
  std::unique_ptr<SocketTransport> t(new SocketTransport());
  t->streams_ = streams;
  for (const NetInterface& i : ifaces) {
    Listener l;
    l.iface = i;
    TUTTI_ASSIGN_OR_RETURN(l.socket, Socket::listen(i.address));
    t->listeners_.push_back(std::move(l));
  }
  return t;
}

Result<std::unique_ptr<RecvConnection>> SocketTransport::listen(const ConnectionSpec& spec,
                                                                ConnectionHandle* handle) {
  SocketHandle h{toWire(listenerFor(spec).socket.boundAddress()), spec.commMagic, spec.connectionId,
                 streams_.sockets()};
  std::memcpy(handle->bytes, &h, sizeof(h));
  TUTTI_ASSIGN_OR_RETURN(HostBuffer slots, HostBuffer::allocate(spec.slotBytes * spec.nslots));
  return std::unique_ptr<RecvConnection>(std::make_unique<SocketRecvConnection>(
      std::move(slots), spec.slotBytes, spec.nslots, streams_, peerName(spec)));
}

Result<std::unique_ptr<SendConnection>> SocketTransport::connect(const ConnectionSpec& spec,
                                                                 const ConnectionHandle& handle) {
  SocketHandle h;
  std::memcpy(&h, handle.bytes, sizeof(h));
  if (h.streams != streams_.sockets())
    return InvalidUsage(peerName(spec) + " uses " + std::to_string(h.streams) +
                        " sockets per connection and this rank " + std::to_string(streams_.sockets()) +
                        " (TUTTI_NSOCKS_PERTHREAD x TUTTI_SOCKET_NTHREADS must match)");
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  SocketAddress addr = fromWire(h.address);
  std::vector<Socket> sockets;
  for (int i = 0; i < h.streams; ++i) {
    auto s = Socket::connect(addr, deadline, spec.abort);
    if (!s.ok()) return s.status().withContext("socket transport: connecting to " + peerName(spec));
    Hello hello{h.magic, h.connectionId, spec.self->rank, i, h.streams};
    TUTTI_RETURN_IF_ERROR(s->sendAll(&hello, sizeof(hello), deadline, spec.abort));
    sockets.push_back(std::move(s.value()));
  }
  TUTTI_ASSIGN_OR_RETURN(HostBuffer slots, HostBuffer::allocate(spec.slotBytes * spec.nslots));
  return std::unique_ptr<SendConnection>(std::make_unique<SocketSendConnection>(
      std::move(sockets), std::move(slots), spec.slotBytes, spec.nslots, streams_, peerName(spec)));
}

Status SocketTransport::accept(const ConnectionSpec& spec, RecvConnection& connection) {
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  Listener& l = listenerFor(spec);
  const int want = streams_.sockets();
  auto complete = [&] {
    auto it = l.early.find(spec.connectionId);
    if (it == l.early.end()) return false;
    for (const Socket& s : it->second)
      if (!s.valid()) return false;
    return true;
  };
  while (!complete()) {
    auto accepted = l.socket.accept(deadline, spec.abort);
    if (!accepted.ok())
      return accepted.status().withContext("socket transport: waiting on " + l.iface.name +
                                           " for " + peerName(spec) + " to connect");
    Hello hello{};
    Status st = accepted->recvAll(&hello, sizeof(hello), Deadline::after(5), spec.abort);
    if (!st.ok() || hello.magic != spec.commMagic || hello.streams != want || hello.stream < 0 ||
        hello.stream >= want) {
      TUTTI_WARN(kSubsysNet, "dropped a connection from %s: %s",
                 accepted->peerAddress().toString().c_str(),
                 st.ok() ? "wrong magic or stream count" : st.message().c_str());
      continue;
    }
    auto& slot = l.early[hello.connectionId];
    slot.resize(want);
    slot[hello.stream] = std::move(accepted.value());
  }
  auto it = l.early.find(spec.connectionId);
  static_cast<SocketRecvConnection&>(connection).attach(std::move(it->second));
  l.early.erase(it);
  return Status::Ok();
}

}  // namespace tutti
