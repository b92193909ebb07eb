#include "src/common/doorbell.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tutti {

namespace {

// "\0tutti-bell-<magic>-<rank>": the leading NUL puts it in the abstract
// namespace of the network namespace.
socklen_t bellAddress(uint64_t magic, int rank, sockaddr_un* addr) {
  *addr = {};
  addr->sun_family = AF_UNIX;
  const int n = snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1, "tutti-bell-%016llx-%d",
                         static_cast<unsigned long long>(magic), rank);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

Result<std::unique_ptr<Doorbell>> Doorbell::bind(uint64_t magic, int rank) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return InternalError(std::string("a doorbell socket: ") + strerror(errno));
  sockaddr_un addr;
  const socklen_t len = bellAddress(magic, rank, &addr);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    close(fd);
    return InternalError("rank " + std::to_string(rank) + " binding its doorbell: " + strerror(err));
  }
  return std::unique_ptr<Doorbell>(new Doorbell(fd));
}

Doorbell::~Doorbell() { close(fd_); }

void Doorbell::drain() const {
  char bytes[64];
  // Bounded: a stranger sending without pause does not keep the rank here.
  for (int i = 0; i < 64 && recv(fd_, bytes, sizeof(bytes), MSG_DONTWAIT) >= 0; ++i) {
  }
}

DoorbellRinger::~DoorbellRinger() {
  if (fd_ >= 0) close(fd_);
}

bool DoorbellRinger::ring() {
  if (unreachable_) return false;
  if (fd_ < 0) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr;
    const socklen_t len = bellAddress(magic_, rank_, &addr);
    if (fd_ < 0 || connect(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
      unreachable_ = true;
      return false;
    }
  }
  const char one = 1;
  // EAGAIN: rung already, and not yet answered.
  if (send(fd_, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
    unreachable_ = true;  // the bell is gone with its communicator
    return false;
  }
  return true;
}

}  // namespace tutti
