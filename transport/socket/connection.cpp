#include "transport/socket/connection.h"

#include <poll.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>

namespace tutti {

namespace {
constexpr size_t kHeaderBytes = sizeof(uint64_t);
// A header with these top bits is no chunk but a notice: "I stop, rank N failed".
constexpr uint64_t kFailureMarker = 0xfa11000000000000ull;
constexpr uint64_t kMarkerMask = 0xffff000000000000ull;
// What the receiver reads ahead of the piece in hand: a small chunk's header
// and data (and those queued behind it) in one recv.
constexpr size_t kReadAheadBytes = 4096;
// After a recv or send found nothing to do, ask poll() before trying again:
// tcp_poll reads the socket's state without its lock, while a failed recv
// takes the lock the sender's packets need to get in.
bool ready(int fd, short events) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace

// The sockets a helper thread may sleep on, without allocating.
struct FdSet {
  pollfd fds[kMaxSocketStreams];
  nfds_t n = 0;
  void add(int fd, short events) { fds[n++] = {fd, events, 0}; }
  bool empty() const { return n == 0; }
  void wait() { ::poll(fds, n, 1); }  // until one is ready, at most 1 ms
};


size_t pieceStart(size_t bytes, int streams, int stream) {
  if (stream <= 0) return 0;
  if (stream >= streams) return bytes;
  size_t raw = bytes * static_cast<size_t>(stream) / static_cast<size_t>(streams);
  size_t aligned = raw / 4096 * 4096;
  return aligned > 0 ? aligned : raw;
}

// ------------------------------------------------------------ StreamDriver

void StreamDriver::start(int threads, std::function<bool(int)> work) {
  for (int t = 0; t < threads; ++t)
    threads_.emplace_back([this, t, work] {
      while (!stop_.load(std::memory_order_acquire) && !failed())
        if (!work(t)) idle();
    });
}

void StreamDriver::stop() {
  stop_.store(true, std::memory_order_release);
  kick();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void StreamDriver::kick() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++kicks_;
  }
  cv_.notify_all();
}

void StreamDriver::idle() {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t seen = kicks_;
  cv_.wait_for(lock, std::chrono::milliseconds(1), [&] { return kicks_ != seen || stop_.load(); });
}

Status StreamDriver::error() const {
  if (!failed()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

Status StreamDriver::fail(Status st) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failed_.load()) {
    error_ = st;
    failed_.store(true, std::memory_order_release);
  }
  return error_;
}

// ------------------------------------------------------------ sender

SocketSendConnection::SocketSendConnection(std::vector<Socket> sockets, HostBuffer slots,
                                           size_t slotBytes, int nslots, SocketStreams streams,
                                           std::string peerName)
    : streams_(sockets.size()),
      slots_(std::move(slots)),
      slotBytes_(slotBytes),
      nslots_(nslots),
      config_(streams),
      peerName_(std::move(peerName)) {
  for (size_t i = 0; i < sockets.size(); ++i) streams_[i].socket = std::move(sockets[i]);
  if (config_.threads > 0) driver_.start(config_.threads, [this](int t) { return pumpThread(t); });
}

uint64_t SocketSendConnection::minSent() const {
  uint64_t m = UINT64_MAX;
  for (const Stream& s : streams_) m = std::min(m, s.sent.load(std::memory_order_acquire));
  return m;
}

int SocketSendConnection::pollFd() const {
  return streams_.size() == 1 && !driver_.threaded() ? streams_[0].socket.fd() : -1;
}

void* SocketSendConnection::acquire(size_t* capacity, uint32_t ahead) {
  uint64_t posted = posted_.load(std::memory_order_relaxed) + ahead;
  if (posted - minSent() >= nslots_) {
    Status st = progress();
    if (!st.ok() || posted - minSent() >= nslots_) return nullptr;
  }
  *capacity = slotBytes_;
  return slots_.data() + (posted % nslots_) * slotBytes_;
}

Status SocketSendConnection::post(size_t bytes) {
  return queue(slots_.data() + (posted_.load(std::memory_order_relaxed) % nslots_) * slotBytes_, bytes, 0, 0);
}

Status SocketSendConnection::postReference(const void* data, size_t bytes) { return queue(data, bytes, 0, 0); }

Status SocketSendConnection::postTaggedReference(const void* data, size_t bytes, uint64_t tag) {
  return queue(data, bytes, tag, sizeof(tag));
}

Status SocketSendConnection::queue(const void* data, size_t dataBytes, uint64_t tag, size_t tagBytes) {
  uint64_t posted = posted_.load(std::memory_order_relaxed);
  const uint64_t idx = posted % nslots_;
  sizes_[idx] = dataBytes + tagBytes;
  data_[idx] = static_cast<const char*>(data);
  dataBytes_[idx] = dataBytes;
  tags_[idx] = tag;
  posted_.store(posted + 1, std::memory_order_release);
  if (driver_.threaded()) {
    driver_.kick();
    return driver_.failed() ? checkPeer() : Status::Ok();
  }
  return progress();
}

int SocketSendConnection::partsOf(uint64_t idx, size_t from, size_t to, iovec* iov) const {
  const size_t dataBytes = dataBytes_[idx];
  int parts = 0;
  if (from < dataBytes) iov[parts++] = {const_cast<char*>(data_[idx]) + from, std::min(to, dataBytes) - from};
  if (to > dataBytes) {
    const size_t begin = std::max(from, dataBytes);
    iov[parts++] = {reinterpret_cast<char*>(const_cast<uint64_t*>(&tags_[idx])) + (begin - dataBytes), to - begin};
  }
  return parts;
}

bool SocketSendConnection::pump(int i, Status* error) {
  Stream& s = streams_[i];
  const int n = static_cast<int>(streams_.size());
  bool moved = false;
  uint64_t sent = s.sent.load(std::memory_order_relaxed);
  if (s.blocked && sent < posted_.load(std::memory_order_acquire) && !ready(s.socket.fd(), POLLOUT))
    return false;
  s.blocked = false;
  while (sent < posted_.load(std::memory_order_acquire)) {
    uint64_t idx = sent % nslots_;
    uint64_t size = sizes_[idx];
    size_t begin = pieceStart(size, n, i), len = pieceStart(size, n, i + 1) - begin;
    s.header = size;
    iovec iov[3];
    int parts = 0;
    if (s.offset < kHeaderBytes) {
      iov[parts++] = {reinterpret_cast<char*>(&s.header) + s.offset, kHeaderBytes - s.offset};
      parts += partsOf(idx, begin, begin + len, iov + parts);
    } else {
      parts += partsOf(idx, begin + (s.offset - kHeaderBytes), begin + len, iov + parts);
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = parts;
    ssize_t w = sendmsg(s.socket.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      s.blocked = errno == EAGAIN || errno == EWOULDBLOCK;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        *error = ErrnoError("send to " + peerName_, errno);
      return moved;
    }
    moved = true;
    s.offset += static_cast<size_t>(w);
    if (s.offset < kHeaderBytes + len) {  // the socket is full
      s.blocked = true;
      return moved;
    }
    s.offset = 0;
    s.sent.store(++sent, std::memory_order_release);
  }
  return moved;
}

bool SocketSendConnection::pumpThread(int t) {
  bool moved = false;
  FdSet waiting;
  for (int i = t * config_.socketsPerThread; i < (t + 1) * config_.socketsPerThread; ++i) {
    Status st;
    moved |= pump(i, &st);
    if (!st.ok()) {
      (void)driver_.fail(st);
      return false;
    }
    if (streams_[i].blocked) waiting.add(streams_[i].socket.fd(), POLLOUT);
  }
  if (!moved && !waiting.empty()) {  // data queued but the sockets are full
    waiting.wait();
    return true;
  }
  return moved;
}

Status SocketSendConnection::progress() {
  if (driver_.threaded() || driver_.failed()) return driver_.failed() ? checkPeer() : Status::Ok();
  for (int i = 0; i < static_cast<int>(streams_.size()); ++i) {
    Status st;
    pump(i, &st);
    if (!st.ok()) {
      (void)driver_.fail(st);
      return checkPeer();  // a broken pipe from a peer that gave up names whom it gave up on
    }
  }
  return Status::Ok();
}

void SocketSendConnection::notifyFailure(int failedRank) {
  driver_.stop();
  for (int i = 0; i < static_cast<int>(streams_.size()); ++i) {
    Stream& s = streams_[i];
    if (!s.socket.valid()) continue;
    // The peer reads a header only between pieces: finish the piece in
    // flight first (its bytes are still where they were), if it fits.
    if (s.offset >= kHeaderBytes) {
      const int n = static_cast<int>(streams_.size());
      const uint64_t idx = s.sent.load(std::memory_order_relaxed) % nslots_;
      const size_t from = pieceStart(sizes_[idx], n, i) + s.offset - kHeaderBytes;
      const size_t to = pieceStart(sizes_[idx], n, i + 1);
      iovec iov[2];
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = partsOf(idx, from, to, iov);
      if (sendmsg(s.socket.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(to - from)) s.offset = 0;
    }
    if (s.offset == 0) {
      uint64_t notice = kFailureMarker | static_cast<uint32_t>(failedRank);
      (void)::send(s.socket.fd(), &notice, sizeof(notice), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    ::shutdown(s.socket.fd(), SHUT_RDWR);
  }
}

int SocketSendConnection::readNotice() {
  if (reportedFailure_.load() >= 0) return reportedFailure_.load();
  for (Stream& s : streams_) {
    uint64_t notice = 0;
    if (!s.socket.valid() ||
        ::recv(s.socket.fd(), &notice, sizeof(notice), MSG_DONTWAIT | MSG_PEEK) != sizeof(notice) ||
        (notice & kMarkerMask) != kFailureMarker)
      continue;
    reportedFailure_.store(static_cast<int>(notice & 0xffffffffu));
    return reportedFailure_.load();
  }
  return -1;
}

Status SocketSendConnection::checkPeer() {
  Status st = driver_.error();
  int failed = readNotice();
  if (failed >= 0)
    return RemoteError(peerName_ + " gave up because rank " + std::to_string(failed) + " failed" +
                       (st.ok() ? "" : " (" + st.message() + ")"));
  return st;
}

// ------------------------------------------------------------ receiver

SocketRecvConnection::SocketRecvConnection(HostBuffer slots, size_t slotBytes, int nslots,
                                           SocketStreams streams, std::string peerName)
    : slots_(std::move(slots)),
      slotBytes_(slotBytes),
      nslots_(nslots),
      config_(streams),
      peerName_(std::move(peerName)) {}

void SocketRecvConnection::attach(std::vector<Socket> sockets) {
  streams_ = std::vector<Stream>(sockets.size());
  for (size_t i = 0; i < sockets.size(); ++i) {
    streams_[i].socket = std::move(sockets[i]);
    streams_[i].ahead.reset(new char[kReadAheadBytes]);
    streams_[i].segmentBytes = streams_[i].socket.segmentBytes();
    streams_[i].socket.delayAcks();
  }
  if (config_.threads > 0) driver_.start(config_.threads, [this](int t) { return pumpThread(t); });
}

uint64_t SocketRecvConnection::minReceived() const {
  uint64_t m = UINT64_MAX;
  for (const Stream& s : streams_) m = std::min(m, s.received.load(std::memory_order_acquire));
  return m;
}

int SocketRecvConnection::pollFd() const {
  return streams_.size() == 1 && !driver_.threaded() ? streams_[0].socket.fd() : -1;
}

// The sender never reads its sockets, so the notice goes back against the
// data: it waits in the sender's receive queue (Linux keeps it there even
// after our close resets the connection) for the sender to look when its
// send fails or its slots stay full.
void SocketRecvConnection::notifyFailure(int failedRank) {
  driver_.stop();
  for (Stream& s : streams_) {
    if (!s.socket.valid()) continue;
    uint64_t notice = kFailureMarker | static_cast<uint32_t>(failedRank);
    (void)::send(s.socket.fd(), &notice, sizeof(notice), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(s.socket.fd(), SHUT_RDWR);
  }
}

const void* SocketRecvConnection::peek(size_t* bytes, uint32_t ahead) {
  uint64_t consumed = consumed_.load(std::memory_order_relaxed) + ahead;
  if (consumed >= minReceived()) {
    Status st = progress();
    if (!st.ok() || consumed >= minReceived()) return nullptr;
  }
  *bytes = sizes_[consumed % nslots_];
  return slots_.data() + (consumed % nslots_) * slotBytes_;
}

Status SocketRecvConnection::release() {
  consumed_.fetch_add(1, std::memory_order_release);
  if (driver_.threaded()) driver_.kick();  // a helper may wait for a free slot
  return Status::Ok();
}

bool SocketRecvConnection::pump(int i, Status* error) {
  Stream& s = streams_[i];
  const int n = static_cast<int>(streams_.size());
  bool moved = false;
  if (s.blocked && !s.hasAhead() && !ready(s.socket.fd(), POLLIN)) return false;
  s.blocked = false;
  // A recv that returns less than it asked for has emptied the socket:
  // the next one would fail, so poll before it (s.blocked) instead.
  bool drained = false;
  // One recv into `dst`: the bytes it got, 0 when none came (and why, in
  // *error or s.blocked).
  auto recvInto = [&](char* dst, size_t want) -> ssize_t {
    if (drained) {
      s.blocked = true;
      return 0;
    }
    ssize_t r = recv(s.socket.fd(), dst, want, MSG_DONTWAIT);
    if (r == 0) {
      *error = RemoteError("connection closed by " + peerName_ + " (did it exit?)");
      return 0;
    }
    if (r < 0) {
      s.blocked = errno == EAGAIN || errno == EWOULDBLOCK;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        *error = ErrnoError("recv from " + peerName_, errno);
      return 0;
    }
    drained = static_cast<size_t>(r) < want;
    moved = true;
    if (static_cast<size_t>(r) < s.segmentBytes) s.socket.delayAcks();
    return r;
  };
  // Fills [dst, dst + want) from the bytes read ahead, then from the socket:
  // a short remainder through the read-ahead buffer (taking what follows
  // it too), a long one straight into place. False when it could not finish.
  auto take = [&](char* dst, size_t want) {
    while (want > 0) {
      if (!s.hasAhead()) {
        if (want >= kReadAheadBytes) {
          ssize_t r = recvInto(dst, want);
          if (r <= 0) return false;
          s.offset += static_cast<size_t>(r);
          dst += r;
          want -= static_cast<size_t>(r);
          continue;
        }
        ssize_t r = recvInto(s.ahead.get(), kReadAheadBytes);
        if (r <= 0) return false;
        s.aheadBegin = 0;
        s.aheadEnd = static_cast<size_t>(r);
      }
      const size_t k = std::min(want, s.aheadEnd - s.aheadBegin);
      std::memcpy(dst, s.ahead.get() + s.aheadBegin, k);
      s.aheadBegin += k;
      s.offset += k;
      dst += k;
      want -= k;
      moved = true;
    }
    return true;
  };
  uint64_t received = s.received.load(std::memory_order_relaxed);
  while (received - consumed_.load(std::memory_order_acquire) < nslots_) {
    if (s.offset < kHeaderBytes) {
      if (!take(reinterpret_cast<char*>(&s.header) + s.offset, kHeaderBytes - s.offset)) return moved;
      if ((s.header & kMarkerMask) == kFailureMarker) {
        reportedFailure_.store(static_cast<int>(s.header & 0xffffffffu));
        *error = RemoteError(peerName_ + " gave up because rank " +
                             std::to_string(reportedFailure_.load()) + " failed");
        return moved;
      }
      if (s.header > slotBytes_) {
        *error = RemoteError(peerName_ + " sent a chunk of " + std::to_string(s.header) +
                             " bytes into a slot of " + std::to_string(slotBytes_) +
                             " (TUTTI_BUFFSIZE or TUTTI_NSTEPS differ between ranks?)");
        return moved;
      }
    }
    const uint64_t idx = received % nslots_;
    const size_t begin = pieceStart(s.header, n, i);
    const size_t len = pieceStart(s.header, n, i + 1) - begin;
    char* piece = slots_.data() + idx * slotBytes_ + begin;
    if (!take(piece + (s.offset - kHeaderBytes), len - (s.offset - kHeaderBytes))) return moved;
    if (i == 0) sizes_[idx] = s.header;
    s.offset = 0;
    s.received.store(++received, std::memory_order_release);
  }
  return moved;
}

// A failure notice or error on one stream may overtake data still queued on
// the others: streams that can still move data are drained first, and the
// error is raised once nothing moves.
bool SocketRecvConnection::pumpStreams(int first, int last, Status* error, FdSet* waiting) {
  bool moved = false;
  for (int i = first; i < last; ++i) {
    Stream& s = streams_[i];
    if (!s.error.ok()) {
      if (error->ok()) *error = s.error;
      continue;
    }
    moved |= pump(i, &s.error);
    if (!s.error.ok()) {
      streamsDone_.fetch_add(1, std::memory_order_acq_rel);
      if (error->ok()) *error = s.error;
      continue;
    }
    bool slotFree = s.received.load() - consumed_.load(std::memory_order_acquire) < nslots_;
    if (waiting && slotFree) waiting->add(s.socket.fd(), POLLIN);
  }
  return moved;
}

bool SocketRecvConnection::pumpThread(int t) {
  FdSet waiting;
  Status error;
  bool moved = pumpStreams(t * config_.socketsPerThread, (t + 1) * config_.socketsPerThread, &error, &waiting);
  // Other threads' streams may still hold data sent before this stream's
  // notice or close: fail only once every stream is done.
  if (!moved && !error.ok()) {
    if (streamsDone_.load(std::memory_order_acquire) == streams_.size()) (void)driver_.fail(error);
    return false;
  }
  if (!moved && !waiting.empty()) {  // room for data that has not come yet
    waiting.wait();
    return true;
  }
  return moved;
}

Status SocketRecvConnection::progress() {
  if (driver_.threaded() || driver_.failed()) return driver_.error();
  Status error;
  bool moved = pumpStreams(0, static_cast<int>(streams_.size()), &error, nullptr);
  if (!moved && !error.ok()) return driver_.fail(error);
  return Status::Ok();
}

}  // namespace tutti
