#include "src/bootstrap/socket_bootstrap.h"

#include "src/common/config.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "src/bootstrap/root.h"
#include "src/common/log.h"

namespace tutti {

namespace {
constexpr int kTagAllgather = -1;
}  // namespace

Result<std::unique_ptr<SocketBootstrap>> SocketBootstrap::create(
    const BootstrapHandle& handle, int rank, int nranks, const NetInterface& iface,
    double timeoutSeconds, const std::atomic<bool>* abort, uint16_t progressPort) {
  std::unique_ptr<SocketBootstrap> b(new SocketBootstrap());
  b->rank_ = rank;
  b->magic_ = handle.magic;
  b->timeoutSeconds_ = timeoutSeconds;
  b->abort_ = abort;
  TUTTI_ASSIGN_OR_RETURN(b->listener_, Socket::listen(iface.address));
  b->newcomers_ = std::make_unique<Newcomers>(
      sizeof(Header), "rank " + std::to_string(rank) + "'s bootstrap listener " +
                          b->listener_.boundAddress().toString());
  RankInfo self;
  self.rank = rank;
  self.nranks = nranks;
  self.pid = getpid();
  self.hostHash = localHostHash();
  self.coresHash = localCoresHash();
  self.bootstrapAddress = toWire(b->listener_.boundAddress());
  self.progressPort = progressPort;
  std::string host = localHostName();
  std::strncpy(self.hostname, host.c_str(), sizeof(self.hostname) - 1);
  Status joined = b->rendezvous(handle, self, Deadline::after(timeoutSeconds));
  if (!joined.ok())  // name the interface: the usual cause is one the others cannot reach
    return joined.withContext("rank " + std::to_string(rank) + " on interface " + iface.name + " (" +
                              iface.address.toString() + ", chosen by TUTTI_SOCKET_IFNAME=\"" +
                              tunableString("SOCKET_IFNAME") + "\")");
  b->out_.resize(nranks);
  b->in_.resize(nranks);
  b->incoming_.resize(nranks);
  b->gone_.resize(nranks);
  return b;
}

Status SocketBootstrap::rendezvous(const BootstrapHandle& handle, RankInfo self,
                                   Deadline deadline) {
  SocketAddress root = fromWire(handle.root);
  std::string lastError;
  // The root may not be up yet, or may drop us (wrong magic): retry until the deadline.
  while (!deadline.expired()) {
    auto connected = Socket::connect(root, deadline, abort_);
    if (!connected.ok()) {
      lastError = connected.status().message();
      if (connected.status().code() != Code::kTimeout) return connected.status();
      break;
    }
    Socket s = std::move(connected.value());
    RootHello hello{handle.magic, self};
    RootReplyHeader reply{};
    Status st = s.sendAll(&hello, sizeof(hello), deadline, abort_);
    if (st.ok()) st = s.recvAll(&reply, sizeof(reply), deadline, abort_);
    if (st.ok() && reply.error != 0) {
      if (reply.length < 0 || reply.length > kMaxRootErrorBytes)
        return RemoteError("the root at " + root.toString() + " refused rank " +
                           std::to_string(self.rank) + " with a malformed answer (length " +
                           std::to_string(reply.length) + "): is that port really a tutti root?");
      std::string msg(reply.length, '\0');
      (void)s.recvAll(msg.data(), msg.size(), deadline, abort_);
      return InvalidArgument("the root at " + root.toString() + " refused rank " +
                             std::to_string(self.rank) + ": " + msg);
    }
    if (st.ok()) {
      peers_.resize(self.nranks);
      if (reply.length != static_cast<int32_t>(peers_.size() * sizeof(RankInfo)))
        return InternalError("root at " + root.toString() + " sent a table of the wrong size");
      st = s.recvAll(peers_.data(), reply.length, deadline, abort_);
      if (st.ok()) return checkTable(root);
    }
    lastError = st.message();
    if (st.code() == Code::kTimeout || st.code() == Code::kInvalidUsage) break;
    timespec ts{0, 20000000};
    nanosleep(&ts, nullptr);
  }
  return TimeoutError("rank " + std::to_string(self.rank) +
                      " could not join the rendezvous at root " + root.toString() +
                      " before the timeout (" + lastError +
                      "; is the root running and is the unique id right?)");
}

std::string SocketBootstrap::describePeer(int peer) const {
  if (peer < 0 || peer >= size()) return "rank " + std::to_string(peer);
  const RankInfo& p = peers_[peer];
  return "rank " + std::to_string(peer) + " (" + p.hostname + " pid " + std::to_string(p.pid) +
         ")";
}

Status SocketBootstrap::send(int peer, int tag, const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  return sendLocked(peer, tag, data, bytes);
}

Status SocketBootstrap::recv(int peer, int tag, void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  return recvLocked(peer, tag, data, bytes);
}

Status SocketBootstrap::sendLocked(int peer, int tag, const void* data, size_t bytes) {
  if (peer < 0 || peer >= size()) return InternalError("bootstrap send to bad rank");
  Deadline dl = deadline();
  if (!out_[peer].valid()) {
    auto s = Socket::connect(fromWire(peers_[peer].bootstrapAddress), dl, abort_);
    if (!s.ok())
      return s.status().withContext("bootstrap: rank " + std::to_string(rank_) +
                                    " cannot reach " + describePeer(peer));
    out_[peer] = std::move(s.value());
  }
  Header h{magic_, rank_, tag, bytes};
  Status st = sendPumping(peer, &h, sizeof(h), dl);
  if (st.ok() && bytes) st = sendPumping(peer, data, bytes, dl);
  return st.withContext("bootstrap: rank " + std::to_string(rank_) + " sending to " +
                        describePeer(peer));
}

// While the peer's socket is full, read what others send us: in an all-gather
// every rank sends before it receives, and messages grow to half the table,
// so blocking here could leave a cycle of ranks each waiting to be read.
Status SocketBootstrap::sendPumping(int peer, const void* data, size_t bytes, Deadline dl) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    TUTTI_ASSIGN_OR_RETURN(size_t n, out_[peer].trySend(p, bytes));
    p += n;
    bytes -= n;
    if (bytes == 0 || n > 0) continue;
    if (abort_ && abort_->load()) return InvalidUsage("bootstrap: aborted");
    if (dl.expired()) return TimeoutError("timed out: the peer reads nothing");
    TUTTI_RETURN_IF_ERROR(pump(dl, &out_[peer]));
  }
  return Status::Ok();
}

Status SocketBootstrap::checkTable(const SocketAddress& root) {
  for (int p = 0; p < size(); ++p) {
    RankInfo& info = peers_[p];
    info.hostname[sizeof(info.hostname) - 1] = '\0';
    if (info.rank != p || info.nranks != size())
      return RemoteError("the root at " + root.toString() + " sent a malformed rank table (entry " +
                         std::to_string(p) + " says rank " + std::to_string(info.rank) + " of " +
                         std::to_string(info.nranks) + ")");
  }
  return Status::Ok();
}

std::string SocketBootstrap::checkHeader(const Header& h, int expectFrom) const {
  if (h.magic != magic_) return "wrong magic";
  if (h.from < 0 || h.from >= size() || (expectFrom >= 0 && h.from != expectFrom))
    return "sender rank " + std::to_string(h.from) + " is not " +
           (expectFrom >= 0 ? std::to_string(expectFrom) : "a rank of this job");
  if (h.bytes > kMaxMessageBytes)
    return "a message of " + std::to_string(h.bytes) + " bytes (at most " +
           std::to_string(kMaxMessageBytes) + ")";
  return "";
}

// Reads what has arrived from `peer` without blocking, stashing each message
// as it completes: a rank may be sending to us while we send to a third, so
// no read may wait for the rest of a message.
Status SocketBootstrap::readArrived(int peer) {
  Incoming& m = incoming_[peer];
  Socket& s = in_[peer];
  for (;;) {
    if (m.headerGot < sizeof(Header)) {
      TUTTI_ASSIGN_OR_RETURN(size_t n, s.tryRecv(reinterpret_cast<char*>(&m.header) + m.headerGot,
                                                 sizeof(Header) - m.headerGot));
      if (n == 0) return Status::Ok();
      m.headerGot += n;
      if (m.headerGot < sizeof(Header)) continue;
      std::string problem = checkHeader(m.header, peer);
      if (!problem.empty()) {
        Status bad = RemoteError("bad bootstrap message from " + s.peerAddress().toString() + ": " + problem);
        TUTTI_WARN(kSubsysBootstrap, "rank %d: %s; closing that connection", rank_, bad.message().c_str());
        return bad;
      }
      m.payload.resize(m.header.bytes);
    }
    if (m.payloadGot < m.payload.size()) {
      TUTTI_ASSIGN_OR_RETURN(size_t n, s.tryRecv(m.payload.data() + m.payloadGot, m.payload.size() - m.payloadGot));
      if (n == 0) return Status::Ok();
      m.payloadGot += n;
      if (m.payloadGot < m.payload.size()) continue;
    }
    stash_[{peer, m.header.tag}].push_back(std::move(m.payload));
    m = Incoming{};
  }
}

// A newcomer is identified by its first message's header, read without
// blocking among the other newcomers; then its messages are read as they arrive.
Status SocketBootstrap::pump(Deadline dl, const Socket* sending) {
  std::vector<pollfd> fds;
  std::vector<int> owners;
  for (int p = 0; p < size(); ++p)
    if (in_[p].valid()) {
      fds.push_back({in_[p].fd(), POLLIN, 0});
      owners.push_back(p);
    }
  if (sending) {  // wakes us when it has room again
    fds.push_back({sending->fd(), POLLOUT, 0});
    owners.push_back(-1);
  }
  newcomers_->wait(listener_, &fds, dl.remainingMs(100));
  newcomers_->acceptAll(listener_);
  for (auto& greeted : newcomers_->progress()) {
    Header h;
    std::memcpy(&h, greeted.greeting.data(), sizeof(h));
    std::string problem = checkHeader(h, -1);
    if (problem.empty() && in_[h.from].valid())
      problem = "rank " + std::to_string(h.from) + " is already connected";
    if (!problem.empty()) {
      newcomers_->drop(greeted.socket, problem);
      continue;
    }
    in_[h.from] = std::move(greeted.socket);
    Incoming& m = incoming_[h.from];
    m.header = h;
    m.headerGot = sizeof(h);
    m.payload.resize(h.bytes);
    Status st = readArrived(h.from);
    if (!st.ok()) closeIncoming(h.from, st);
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!fds[i].revents || owners[i] < 0) continue;
    Status st = readArrived(owners[i]);
    if (!st.ok()) closeIncoming(owners[i], st);
  }
  return Status::Ok();
}

// A peer that closes after its last message is no error until someone waits
// for a message it never sent (recvLocked tells then).
void SocketBootstrap::closeIncoming(int peer, const Status& why) {
  in_[peer].close();
  incoming_[peer] = Incoming{};
  gone_[peer] = why.message();
  TUTTI_INFO(kSubsysBootstrap, "rank %d closed its bootstrap connection from %s: %s", rank_,
             describePeer(peer).c_str(), why.message().c_str());
}

Status SocketBootstrap::recvLocked(int peer, int tag, void* data, size_t bytes) {
  if (peer < 0 || peer >= size()) return InternalError("bootstrap recv from bad rank");
  Deadline dl = deadline();
  for (;;) {
    auto it = stash_.find({peer, tag});
    if (it != stash_.end() && !it->second.empty()) {
      Message m = std::move(it->second.front());
      it->second.pop_front();
      if (m.size() != bytes)
        return InternalError("bootstrap: " + describePeer(peer) + " sent " +
                             std::to_string(m.size()) + " bytes, expected " +
                             std::to_string(bytes));
      if (bytes) std::memcpy(data, m.data(), bytes);
      return Status::Ok();
    }
    if (!gone_[peer].empty())
      return RemoteError("bootstrap: " + describePeer(peer) + " closed its connection to rank " +
                         std::to_string(rank_) + " (did it exit?): " + gone_[peer]);
    if (abort_ && abort_->load()) return InvalidUsage("bootstrap: aborted");
    if (dl.expired())
      return TimeoutError("bootstrap: rank " + std::to_string(rank_) +
                          " timed out waiting for a message (tag " + std::to_string(tag) +
                          ") from " + describePeer(peer));
    TUTTI_RETURN_IF_ERROR(pump(dl));
  }
}

// Bruck's all-gather: in round k a rank passes every slot it holds (up to
// 2^k) to the rank 2^k below it and takes as many from the rank 2^k above, so
// n ranks need ceil(log2 n) rounds, not a ring's n - 1 steps, each of which
// waits for a process to be scheduled (64 ranks: 6 rounds instead of 63).
Status SocketBootstrap::allgather(void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int n = size();
  char* base = static_cast<char*>(data);
  // held[i] is the slot of rank (rank_ + i) % n.
  std::vector<char> held(static_cast<size_t>(n) * bytes);
  std::memcpy(held.data(), base + static_cast<size_t>(rank_) * bytes, bytes);
  for (int have = 1; have < n; have *= 2) {
    const size_t moved = static_cast<size_t>(std::min(have, n - have)) * bytes;
    TUTTI_RETURN_IF_ERROR(sendLocked((rank_ - have + n) % n, kTagAllgather, held.data(), moved));
    TUTTI_RETURN_IF_ERROR(recvLocked((rank_ + have) % n, kTagAllgather, held.data() + have * bytes, moved));
  }
  for (int i = 1; i < n; ++i)
    std::memcpy(base + static_cast<size_t>((rank_ + i) % n) * bytes, held.data() + i * bytes, bytes);
  return Status::Ok();
}

Status SocketBootstrap::barrier() {
  std::vector<char> dummy(size());
  return allgather(dummy.data(), 1);
}

}  // namespace tutti
