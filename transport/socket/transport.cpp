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

Result<std::unique_ptr<SocketTransport>> SocketTransport::create(const std::vector<NetInterface>& ifaces) {
  TUTTI_ASSIGN_OR_RETURN(SocketStreams streams, SocketStreams::fromEnv());
  return create(ifaces, streams);
}

std::string SocketTransport::settings() const {
  return std::to_string(streams_.sockets()) +
         " sockets per connection (TUTTI_NSOCKS_PERTHREAD x TUTTI_SOCKET_NTHREADS)";
}

Result<std::unique_ptr<SocketTransport>> SocketTransport::create(const std::vector<NetInterface>& ifaces,
                                                                 SocketStreams streams) {
  if (ifaces.empty()) return InvalidArgument("socket transport: no interface to listen on");
  std::unique_ptr<SocketTransport> t(new SocketTransport());
  t->streams_ = streams;
  for (const NetInterface& i : ifaces) {
    Listener l;
    l.iface = i;
    TUTTI_ASSIGN_OR_RETURN(l.socket, Socket::listen(i.address));
    l.newcomers = std::make_unique<Newcomers>(
        sizeof(Hello), "socket transport listener " + l.socket.boundAddress().toString());
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

bool SocketTransport::file(Listener& l, Newcomers::Greeted greeted, uint64_t commMagic) {
  Hello hello;
  std::memcpy(&hello, greeted.greeting.data(), sizeof(hello));
  const int want = streams_.sockets();
  std::string problem;
  if (hello.magic != commMagic) problem = "wrong magic";
  else if (hello.streams != want || hello.stream < 0 || hello.stream >= want)
    problem = "stream " + std::to_string(hello.stream) + " of " + std::to_string(hello.streams) +
              " (this rank uses " + std::to_string(want) + ")";
  Arrived* a = problem.empty() ? &l.early[hello.connectionId] : nullptr;
  if (a && a->streams.empty()) {
    a->streams.resize(want);
    a->senderRank = hello.senderRank;
  }
  if (a && a->senderRank != hello.senderRank)
    problem = "rank " + std::to_string(hello.senderRank) + " claims a connection of rank " +
              std::to_string(a->senderRank);
  else if (a && a->streams[hello.stream].valid())
    problem = "stream " + std::to_string(hello.stream) + " of connection " +
              std::to_string(hello.connectionId) + " arrived twice";
  if (!problem.empty()) {
    l.newcomers->drop(greeted.socket, problem);
    return false;
  }
  a->streams[hello.stream] = std::move(greeted.socket);
  return true;
}

Status SocketTransport::accept(const ConnectionSpec& spec, RecvConnection& connection) {
  Deadline deadline = Deadline::after(spec.timeoutSeconds);
  Listener& l = listenerFor(spec);
  auto complete = [&] {
    auto it = l.early.find(spec.connectionId);
    if (it == l.early.end()) return false;
    for (const Socket& s : it->second.streams)
      if (!s.valid()) return false;
    return true;
  };
  // Hellos are read side by side (Newcomers): a stranger on the port delays nobody.
  while (!complete()) {
    if (spec.abort && spec.abort->load()) return InvalidUsage("aborted during socket transport setup");
    if (deadline.expired())
      return TimeoutError("socket transport: waiting on " + l.iface.name + " (" +
                          l.socket.boundAddress().toString() + ") for " + peerName(spec) +
                          " to connect: timed out");
    l.newcomers->wait(l.socket, nullptr, deadline.remainingMs(100));
    l.newcomers->acceptAll(l.socket);
    for (auto& greeted : l.newcomers->progress()) file(l, std::move(greeted), spec.commMagic);
  }
  auto it = l.early.find(spec.connectionId);
  if (it->second.senderRank != spec.peer->rank) {
    int claimed = it->second.senderRank;
    l.early.erase(it);
    return RemoteError("socket transport: connection " + std::to_string(spec.connectionId) +
                       " was expected from " + peerName(spec) + " but rank " +
                       std::to_string(claimed) + " made it");
  }
  static_cast<SocketRecvConnection&>(connection).attach(std::move(it->second.streams));
  l.early.erase(it);
  return Status::Ok();
}

}  // namespace tutti
