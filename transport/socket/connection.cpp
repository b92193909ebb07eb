#include "transport/socket/connection.h"

#include <poll.h>
#include <sys/uio.h>

#include <cerrno>

namespace tutti {

namespace {
constexpr size_t kHeaderBytes = sizeof(uint64_t);
// A header with these top bits is no chunk but a notice: "I stop, rank N failed".
constexpr uint64_t kFailureMarker = 0xfa11000000000000ull;
constexpr uint64_t kMarkerMask = 0xffff000000000000ull;
// After a recv or send found nothing to do, ask poll() before trying again:
// tcp_poll reads the socket's state without its lock, while a failed recv
// takes the lock the sender's packets need to get in.
bool ready(int fd, short events) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace

SocketSendConnection::SocketSendConnection(Socket socket, HostBuffer slots, size_t slotBytes,
                                           int nslots, std::string peerName)
    : socket_(std::move(socket)),
      slots_(std::move(slots)),
      slotBytes_(slotBytes),
      nslots_(nslots),
      peerName_(std::move(peerName)) {}

void* SocketSendConnection::acquire(size_t* capacity) {
  if (posted_ - sent_ >= nslots_) {
    Status st = progress();
    if (!st.ok() || posted_ - sent_ >= nslots_) return nullptr;
  }
  *capacity = slotBytes_;
  return slots_.data() + (posted_ % nslots_) * slotBytes_;
}

Status SocketSendConnection::post(size_t bytes) {
  return postReference(slots_.data() + (posted_ % nslots_) * slotBytes_, bytes);
}

Status SocketSendConnection::postReference(const void* data, size_t bytes) {
  sizes_[posted_ % nslots_] = bytes;
  data_[posted_ % nslots_] = static_cast<const char*>(data);
  ++posted_;
  return progress();
}

Status SocketSendConnection::progress() {
  if (!error_.ok()) return error_;
  if (blocked_ && sent_ < posted_ && !ready(socket_.fd(), POLLOUT)) return Status::Ok();
  blocked_ = false;
  while (sent_ < posted_) {
    uint64_t idx = sent_ % nslots_;
    uint64_t size = sizes_[idx];
    char* data = const_cast<char*>(data_[idx]);
    iovec iov[2];
    int n = 0;
    if (offset_ < kHeaderBytes) {
      iov[n++] = {reinterpret_cast<char*>(&sizes_[idx]) + offset_, kHeaderBytes - offset_};
      iov[n++] = {data, size};
    } else {
      iov[n++] = {data + (offset_ - kHeaderBytes), size - (offset_ - kHeaderBytes)};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    ssize_t w = sendmsg(socket_.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      blocked_ = errno == EAGAIN || errno == EWOULDBLOCK;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::Ok();
      return error_ = ErrnoError("send to " + peerName_, errno);
    }
    offset_ += static_cast<size_t>(w);
    if (offset_ < kHeaderBytes + size) {  // the socket is full
      blocked_ = true;
      return Status::Ok();
    }
    offset_ = 0;
    ++sent_;
  }
  return Status::Ok();
}

void SocketSendConnection::notifyFailure(int failedRank) {
  if (!socket_.valid()) return;
  if (offset_ == 0) {  // only between chunks can the peer read a header
    uint64_t notice = kFailureMarker | static_cast<uint32_t>(failedRank);
    (void)::send(socket_.fd(), &notice, sizeof(notice), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::shutdown(socket_.fd(), SHUT_RDWR);
}

void SocketRecvConnection::notifyFailure(int) {
  if (socket_.valid()) ::shutdown(socket_.fd(), SHUT_RDWR);
}

SocketRecvConnection::SocketRecvConnection(HostBuffer slots, size_t slotBytes, int nslots,
                                           std::string peerName)
    : slots_(std::move(slots)), slotBytes_(slotBytes), nslots_(nslots), peerName_(std::move(peerName)) {}

const void* SocketRecvConnection::peek(size_t* bytes) {
  if (consumed_ == received_) {
    Status st = progress();
    if (!st.ok() || consumed_ == received_) return nullptr;
  }
  *bytes = sizes_[consumed_ % nslots_];
  return slots_.data() + (consumed_ % nslots_) * slotBytes_;
}

Status SocketRecvConnection::release() {
  ++consumed_;
  return Status::Ok();
}

Status SocketRecvConnection::progress() {
  if (!error_.ok()) return error_;
  if (blocked_ && !ready(socket_.fd(), POLLIN)) return Status::Ok();
  blocked_ = false;
  while (received_ - consumed_ < nslots_) {
    uint64_t idx = received_ % nslots_;
    char* data = slots_.data() + idx * slotBytes_;
    ssize_t r;
    if (offset_ < kHeaderBytes) {
      r = recv(socket_.fd(), reinterpret_cast<char*>(&header_) + offset_, kHeaderBytes - offset_,
               MSG_DONTWAIT);
    } else {
      r = recv(socket_.fd(), data + (offset_ - kHeaderBytes), header_ - (offset_ - kHeaderBytes),
               MSG_DONTWAIT);
    }
    if (r == 0) return error_ = RemoteError("connection closed by " + peerName_ + " (did it exit?)");
    if (r < 0) {
      blocked_ = errno == EAGAIN || errno == EWOULDBLOCK;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::Ok();
      return error_ = ErrnoError("recv from " + peerName_, errno);
    }
    offset_ += static_cast<size_t>(r);
    if (offset_ < kHeaderBytes) continue;
    if (offset_ == kHeaderBytes && (header_ & kMarkerMask) == kFailureMarker) {
      reportedFailure_ = static_cast<int>(header_ & 0xffffffffu);
      return error_ = RemoteError(peerName_ + " gave up because rank " +
                                  std::to_string(reportedFailure_) + " failed");
    }
    if (offset_ == kHeaderBytes && header_ > slotBytes_)
      return error_ = RemoteError(peerName_ + " sent a chunk of " + std::to_string(header_) +
                         " bytes into a slot of " + std::to_string(slotBytes_) +
                         " (TUTTI_BUFFSIZE or TUTTI_NSTEPS differ between ranks?)");
    if (offset_ < kHeaderBytes + header_) continue;
    sizes_[idx] = header_;
    offset_ = 0;
    ++received_;
  }
  return Status::Ok();
}

}  // namespace tutti
