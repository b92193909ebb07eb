// TCP sockets with bounded waits: every connect, accept, send and receive takes
// a Deadline and an optional abort flag, so nothing here can block forever.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <string>

#include "src/common/clock.h"
#include "src/common/status.h"

namespace tutti {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  int port() const;
  void setPort(int port);
  std::string toString() const;  // "1.2.3.4:56" or "[::1]:56"
  // Parses "host:port", "[v6]:port"; host may be a name.
  static Result<SocketAddress> parse(const std::string& hostPort);
};

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_), peer_(o.peer_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

  // Listens on addr (port 0 picks one); the bound address is in boundAddress().
  static Result<Socket> listen(const SocketAddress& addr);
  // Connects, retrying refused or unreachable attempts until the deadline.
  static Result<Socket> connect(const SocketAddress& addr, Deadline deadline,
                                const std::atomic<bool>* abort = nullptr);
  // Accepts one connection; a timeout error when none comes before the deadline.
  Result<Socket> accept(Deadline deadline, const std::atomic<bool>* abort = nullptr);
  // Never blocks: an invalid Socket when no connection is waiting.
  Result<Socket> tryAccept();

  Status sendAll(const void* data, size_t bytes, Deadline deadline,
                 const std::atomic<bool>* abort = nullptr);
  Status recvAll(void* data, size_t bytes, Deadline deadline,
                 const std::atomic<bool>* abort = nullptr);
  // Non-blocking: bytes moved (0 when it would block); an error on EOF or failure.
  Result<size_t> trySend(const void* data, size_t bytes);
  Result<size_t> tryRecv(void* data, size_t bytes);

  // The largest segment this connection sends or receives (TCP_MAXSEG).
  size_t segmentBytes() const;
  // Lets the kernel hold back the ACK of small segments until this end sends
  // or another segment arrives (TCP_QUICKACK off). A socket that only reads
  // never sends, so without this every small message read costs a packet
  // back; the kernel drops the setting again when its delayed-ACK timer
  // fires, so a reader sets it after each short read.
  void delayAcks();

  SocketAddress boundAddress() const;
  const SocketAddress& peerAddress() const { return peer_; }
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void close();

 private:
  Status waitFor(short events, Deadline deadline, const std::atomic<bool>* abort,
                 const char* what);
  int fd_ = -1;
  SocketAddress peer_;
};

}  // namespace tutti
