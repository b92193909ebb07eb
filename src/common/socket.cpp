#include "src/common/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tutti {

int SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return -1;
}

void SocketAddress::setPort(int port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host,
              sizeof(host));
    return std::string(host) + ":" + std::to_string(port());
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host,
              sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(port());
  }
  return "<no address>";
}

Result<SocketAddress> SocketAddress::parse(const std::string& hostPort) {
  std::string host, port;
  if (!hostPort.empty() && hostPort[0] == '[') {
    size_t close = hostPort.find(']');
    if (close == std::string::npos || close + 1 >= hostPort.size() || hostPort[close + 1] != ':')
      return InvalidArgument("bad address \"" + hostPort + "\" (expected [v6addr]:port)");
    host = hostPort.substr(1, close - 1);
    port = hostPort.substr(close + 2);
  } else {
    size_t colon = hostPort.rfind(':');
    if (colon == std::string::npos)
      return InvalidArgument("bad address \"" + hostPort + "\" (expected host:port)");
    host = hostPort.substr(0, colon);
    port = hostPort.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res)
    return InvalidArgument("cannot resolve \"" + hostPort + "\": " + gai_strerror(rc));
  SocketAddress a;
  std::memcpy(&a.storage, res->ai_addr, res->ai_addrlen);
  a.length = res->ai_addrlen;
  freeaddrinfo(res);
  return a;
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    peer_ = o.peer_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

static void setNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

static void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Result<Socket> Socket::listen(const SocketAddress& addr) {
  int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket()", errno);
  Socket s(fd);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr.storage), addr.length) != 0)
    return ErrnoError("bind(" + addr.toString() + ")", errno);
  if (::listen(fd, 1024) != 0) return ErrnoError("listen(" + addr.toString() + ")", errno);
  setNonBlocking(fd);
  return s;
}

size_t Socket::segmentBytes() const {
  int mss = 0;
  socklen_t len = sizeof(mss);
  if (getsockopt(fd_, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) != 0 || mss <= 0) return 0;
  return static_cast<size_t>(mss);
}

void Socket::delayAcks() {
  int off = 0;
  setsockopt(fd_, IPPROTO_TCP, TCP_QUICKACK, &off, sizeof(off));
}

SocketAddress Socket::boundAddress() const {
  SocketAddress a;
  a.length = sizeof(a.storage);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&a.storage), &a.length);
  return a;
}

Status Socket::waitFor(short events, Deadline deadline, const std::atomic<bool>* abort,
                       const char* what) {
  for (;;) {
    if (abort && abort->load(std::memory_order_relaxed))
      return InvalidUsage(std::string("aborted while waiting to ") + what);
    pollfd p{fd_, events, 0};
    int rc = ::poll(&p, 1, deadline.remainingMs(100));
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return ErrnoError(std::string("poll while ") + what, errno);
    if (deadline.expired())
      return TimeoutError(std::string("timed out waiting to ") + what + " (peer " +
                          peer_.toString() + ")");
  }
}

Result<Socket> Socket::connect(const SocketAddress& addr, Deadline deadline,
                               const std::atomic<bool>* abort) {
  std::string lastError = "no attempt";
  for (int attempt = 0;; ++attempt) {
    if (abort && abort->load()) return InvalidUsage("aborted while connecting to " + addr.toString());
    int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return ErrnoError("socket()", errno);
    Socket s(fd);
    s.peer_ = addr;
    setNonBlocking(fd);
    setNoDelay(fd);
    int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr.storage), addr.length);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      Status st = s.waitFor(POLLOUT, deadline, abort, "connect");
      if (!st.ok()) return TimeoutError("cannot connect to " + addr.toString() + ": " + st.message());
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) return s;
    lastError = strerror(err);
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != ENETUNREACH && err != EHOSTUNREACH &&
        err != ECONNRESET && err != EAGAIN)
      return ErrnoError("connect to " + addr.toString(), err);
    if (deadline.expired())
      return TimeoutError("cannot connect to " + addr.toString() + " before the timeout (" +
                          lastError + ")");
    // Peers start at different times: retry, backing off up to 100 ms.
    int ms = attempt < 10 ? 1 << attempt / 2 : 100;
    timespec ts{0, static_cast<long>(ms) * 1000000};
    nanosleep(&ts, nullptr);
  }
}

Result<Socket> Socket::tryAccept() {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
    if (fd >= 0) {
      Socket s(fd);
      std::memcpy(&s.peer_.storage, &peer, len);
      s.peer_.length = len;
      setNonBlocking(fd);
      setNoDelay(fd);
      return s;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;  // a client gave up in the queue
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Socket();
    return ErrnoError("accept on " + boundAddress().toString(), errno);
  }
}

Result<Socket> Socket::accept(Deadline deadline, const std::atomic<bool>* abort) {
  for (;;) {
    TUTTI_ASSIGN_OR_RETURN(Socket s, tryAccept());
    if (s.valid()) return s;
    Status st = waitFor(POLLIN, deadline, abort, "accept a connection");
    if (!st.ok())
      return Status(st.code(), "no connection arrived at " + boundAddress().toString() +
                                   " before the timeout");
  }
}

Result<size_t> Socket::trySend(const void* data, size_t bytes) {
  ssize_t n = ::send(fd_, data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) return static_cast<size_t>(n);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size_t{0};
  return ErrnoError("send to " + peer_.toString(), errno);
}

Result<size_t> Socket::tryRecv(void* data, size_t bytes) {
  ssize_t n = ::recv(fd_, data, bytes, MSG_DONTWAIT);
  if (n > 0) return static_cast<size_t>(n);
  if (n == 0) return RemoteError("connection closed by " + peer_.toString());
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size_t{0};
  return ErrnoError("recv from " + peer_.toString(), errno);
}

Status Socket::sendAll(const void* data, size_t bytes, Deadline deadline,
                       const std::atomic<bool>* abort) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    TUTTI_ASSIGN_OR_RETURN(size_t n, trySend(p, bytes));
    p += n;
    bytes -= n;
    if (bytes > 0 && n == 0) TUTTI_RETURN_IF_ERROR(waitFor(POLLOUT, deadline, abort, "send"));
  }
  return Status::Ok();
}

Status Socket::recvAll(void* data, size_t bytes, Deadline deadline,
                       const std::atomic<bool>* abort) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    TUTTI_ASSIGN_OR_RETURN(size_t n, tryRecv(p, bytes));
    p += n;
    bytes -= n;
    if (bytes > 0 && n == 0) TUTTI_RETURN_IF_ERROR(waitFor(POLLIN, deadline, abort, "receive"));
  }
  return Status::Ok();
}

}  // namespace tutti
