#include "src/bootstrap/socket_bootstrap.h"

#include "src/common/config.h"

#include <poll.h>
#include <unistd.h>

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
  Status st = out_[peer].sendAll(&h, sizeof(h), dl, abort_);
  if (st.ok() && bytes) st = out_[peer].sendAll(data, bytes, dl, abort_);
  return st.withContext("bootstrap: rank " + std::to_string(rank_) + " sending to " +
                        describePeer(peer));
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

Status SocketBootstrap::readMessage(Socket& s, Deadline dl, int expectFrom) {
  Header h{};
  TUTTI_RETURN_IF_ERROR(s.recvAll(&h, sizeof(h), dl, abort_));
  std::string problem = checkHeader(h, expectFrom);
  if (!problem.empty()) {
    Status bad = RemoteError("bad bootstrap message from " + s.peerAddress().toString() + ": " + problem);
    TUTTI_WARN(kSubsysBootstrap, "rank %d: %s; closing that connection", rank_, bad.message().c_str());
    return bad;
  }
  return readPayload(s, h, dl);
}

Status SocketBootstrap::readPayload(Socket& s, const Header& h, Deadline dl) {
  Message m(h.bytes);
  if (h.bytes) TUTTI_RETURN_IF_ERROR(s.recvAll(m.data(), h.bytes, dl, abort_));
  stash_[{h.from, h.tag}].push_back(std::move(m));
  return Status::Ok();
}

// A newcomer is identified by its first message's header, read without
// blocking among the other newcomers; the payload of a message from a known
// rank is then read in full.
Status SocketBootstrap::pump(Deadline dl, int awaitedPeer) {
  std::vector<pollfd> fds;
  std::vector<int> owners;
  for (int p = 0; p < size(); ++p)
    if (in_[p].valid()) {
      fds.push_back({in_[p].fd(), POLLIN, 0});
      owners.push_back(p);
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
    Status st = readPayload(in_[h.from], h, dl);
    if (!st.ok()) {
      in_[h.from].close();
      if (h.from == awaitedPeer || awaitedPeer < 0)
        return st.withContext("bootstrap: reading from " + describePeer(h.from));
    }
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!fds[i].revents) continue;
    int p = owners[i];
    Status st = readMessage(in_[p], dl, p);
    if (st.ok()) continue;
    in_[p].close();
    TUTTI_INFO(kSubsysBootstrap, "rank %d closed its bootstrap connection from %s: %s", rank_,
               describePeer(p).c_str(), st.message().c_str());
    if (p == awaitedPeer || awaitedPeer < 0)
      return RemoteError("bootstrap: " + describePeer(p) +
                         " closed its connection (did it exit?): " + st.message());
  }
  return Status::Ok();
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
    if (abort_ && abort_->load()) return InvalidUsage("bootstrap: aborted");
    if (dl.expired())
      return TimeoutError("bootstrap: rank " + std::to_string(rank_) +
                          " timed out waiting for a message (tag " + std::to_string(tag) +
                          ") from " + describePeer(peer));
    TUTTI_RETURN_IF_ERROR(pump(dl, peer));
  }
}

Status SocketBootstrap::allgather(void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  int n = size();
  char* base = static_cast<char*>(data);
  int next = (rank_ + 1) % n, prev = (rank_ - 1 + n) % n;
  // Ring: at step s pass on the slot that started s ranks back.
  for (int s = 0; s < n - 1; ++s) {
    int sendSlot = (rank_ - s + n) % n;
    int recvSlot = (rank_ - s - 1 + n) % n;
    TUTTI_RETURN_IF_ERROR(sendLocked(next, kTagAllgather, base + sendSlot * bytes, bytes));
    TUTTI_RETURN_IF_ERROR(recvLocked(prev, kTagAllgather, base + recvSlot * bytes, bytes));
  }
  return Status::Ok();
}

Status SocketBootstrap::barrier() {
  std::vector<char> dummy(size());
  return allgather(dummy.data(), 1);
}

}  // namespace tutti
