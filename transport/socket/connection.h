// Both ends of a TCP connection. Each chunk goes on the wire as an 8-byte
// length and the payload; the receiver reads the payload straight into a free
// slot. All I/O is non-blocking and driven by progress().
#pragma once

#include <string>

#include "src/common/host_buffer.h"
#include "src/common/socket.h"
#include "transport/transport.h"

namespace tutti {

class SocketSendConnection final : public SendConnection {
 public:
  SocketSendConnection(Socket socket, HostBuffer slots, size_t slotBytes, int nslots,
                       std::string peerName);
  void* acquire(size_t* capacity) override;
  Status post(size_t bytes) override;
  bool sendsByReference() const override { return true; }
  Status postReference(const void* data, size_t bytes) override;
  Status progress() override;
  bool flushed() const override { return sent_ == posted_; }
  Status checkPeer() override { return error_; }
  void notifyFailure(int failedRank) override;
  int reportedFailure() const override { return -1; }
  int pollFd() const override { return socket_.fd(); }

 private:
  Socket socket_;
  HostBuffer slots_;
  size_t slotBytes_;
  uint64_t nslots_;
  std::string peerName_;
  uint64_t posted_ = 0;
  uint64_t sent_ = 0;       // chunks fully written to the socket
  size_t offset_ = 0;       // bytes of the current chunk (header included) written
  uint64_t sizes_[64] = {};
  const char* data_[64] = {};  // each queued chunk: its slot, or the caller's memory
  bool blocked_ = false;       // the last send found the socket full
  Status error_;  // sticky: the first I/O error, reported by checkPeer
};

class SocketRecvConnection final : public RecvConnection {
 public:
  SocketRecvConnection(HostBuffer slots, size_t slotBytes, int nslots, std::string peerName);
  void attach(Socket socket) { socket_ = std::move(socket); }
  const void* peek(size_t* bytes) override;
  Status release() override;
  Status progress() override;
  Status checkPeer() override { return error_; }
  void notifyFailure(int failedRank) override;
  int reportedFailure() const override { return reportedFailure_; }
  int pollFd() const override { return socket_.fd(); }

 private:
  Socket socket_;
  HostBuffer slots_;
  size_t slotBytes_;
  uint64_t nslots_;
  std::string peerName_;
  int reportedFailure_ = -1;
  uint64_t received_ = 0;   // complete chunks
  uint64_t consumed_ = 0;
  size_t offset_ = 0;       // bytes of the incoming chunk (header included) read
  uint64_t header_ = 0;
  uint64_t sizes_[64] = {};
  bool blocked_ = false;  // the last recv found nothing
  Status error_;
};

}  // namespace tutti
