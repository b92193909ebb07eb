// Both ends of a TCP connection, striped over one or more sockets (streams).
// Each chunk is cut into one piece per stream; every stream carries its
// piece of every chunk, in order, behind an 8-byte header holding the whole
// chunk's size (so each end computes the same cut). The receiver reads the
// pieces straight into a free slot; a chunk is complete when every stream
// has delivered its piece. Streams are driven without blocking by progress()
// or, with helper threads, by the threads (TUTTI_SOCKET_NTHREADS). The
// receiver reads a few KiB ahead, so a small chunk's header and data (and
// the chunks queued behind it) take one recv, not two each.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/common/host_buffer.h"
#include "src/common/socket.h"
#include "transport/socket/streams.h"
#include "transport/transport.h"

struct iovec;

namespace tutti {

// Piece `stream` of `streams` of a chunk of `bytes`: its start (and the next
// piece's start is its end). Cut on 4 KiB boundaries where the chunk allows.
size_t pieceStart(size_t bytes, int streams, int stream);

// Helper threads and the first error, shared by both directions' code.
class StreamDriver {
 public:
  ~StreamDriver() { stop(); }
  // Runs `work(thread)` on `threads` helper threads until stopped; work
  // returns whether it moved anything, and sleeps itself when it could not.
  void start(int threads, std::function<bool(int)> work);
  void stop();
  bool threaded() const { return !threads_.empty(); }
  // Wakes helpers waiting for something to do.
  void kick();
  // A helper with nothing to do waits here until kicked (or 1 ms passes).
  void idle();
  Status error() const;
  Status fail(Status st);  // records the first error, returns it
  bool failed() const { return failed_.load(std::memory_order_acquire); }

 private:
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t kicks_ = 0;
  Status error_;
};

class SocketSendConnection final : public SendConnection {
 public:
  SocketSendConnection(std::vector<Socket> sockets, HostBuffer slots, size_t slotBytes, int nslots,
                       SocketStreams streams, std::string peerName);
  ~SocketSendConnection() override { driver_.stop(); }
  void* acquire(size_t* capacity, uint32_t ahead) override;
  Status post(size_t bytes) override;
  bool sendsByReference() const override { return true; }
  Status postReference(const void* data, size_t bytes) override;
  bool sendsTaggedByReference() const override { return true; }
  Status postTaggedReference(const void* data, size_t bytes, uint64_t tag) override;
  Status progress() override;
  bool flushed() const override { return minSent() == posted_.load(std::memory_order_acquire); }
  // Also looks for a failure notice the receiver wrote back (see
  // SocketRecvConnection::notifyFailure).
  Status checkPeer() override;
  void notifyFailure(int failedRank) override;
  int reportedFailure() const override { return reportedFailure_.load(); }
  int pollFd() const override;
  SlotRegion slots() const override { return {slots_.data(), slots_.size(), false}; }

 private:
  // The failed rank the receiver reported back, or -1; peeks, never blocks.
  int readNotice();
  struct Stream {
    Socket socket;
    std::atomic<uint64_t> sent{0};  // chunks whose piece is fully written
    size_t offset = 0;              // bytes of the current piece (header included) written
    uint64_t header = 0;
    bool blocked = false;           // the last send found the socket full
  };
  uint64_t minSent() const;
  Status queue(const void* data, size_t dataBytes, uint64_t tag, size_t tagBytes);
  // Bytes [from, to) of queued chunk idx: its data, then its tag. Returns the parts.
  int partsOf(uint64_t idx, size_t from, size_t to, iovec* iov) const;
  // Writes what it can of stream i; false when it could not move anything.
  bool pump(int i, Status* error);
  bool pumpThread(int thread);

  std::vector<Stream> streams_;
  HostBuffer slots_;
  size_t slotBytes_;
  uint64_t nslots_;
  SocketStreams config_;
  std::string peerName_;
  std::atomic<uint64_t> posted_{0};
  std::atomic<int> reportedFailure_{-1};
  // Each queued chunk: its size on the wire, its data (its slot, or the
  // caller's memory) and how many of its bytes that holds; the rest is its tag.
  uint64_t sizes_[64] = {};
  const char* data_[64] = {};
  uint64_t dataBytes_[64] = {};
  uint64_t tags_[64] = {};
  StreamDriver driver_;
};

struct FdSet;  // the sockets a helper thread sleeps on

class SocketRecvConnection final : public RecvConnection {
 public:
  SocketRecvConnection(HostBuffer slots, size_t slotBytes, int nslots, SocketStreams streams,
                       std::string peerName);
  ~SocketRecvConnection() override { driver_.stop(); }
  // Takes the accepted sockets (stream order) and starts any helper threads.
  void attach(std::vector<Socket> sockets);
  const void* peek(size_t* bytes, uint32_t ahead) override;
  Status release() override;
  Status progress() override;
  Status checkPeer() override { return driver_.error(); }
  void notifyFailure(int failedRank) override;
  int reportedFailure() const override { return reportedFailure_.load(); }
  int pollFd() const override;
  SlotRegion slots() const override { return {slots_.data(), slots_.size(), false}; }

 private:
  struct Stream {
    Socket socket;
    std::atomic<uint64_t> received{0};  // chunks whose piece has arrived
    size_t offset = 0;
    uint64_t header = 0;
    bool blocked = false;
    // A read shorter than this (the connection's segment) leaves the
    // kernel's ACK to wait (Socket::delayAcks); a longer one is ACKed anyway.
    size_t segmentBytes = 0;
    Status error;  // this stream is done: closed, failed, or a failure notice came
    // Bytes read past the piece in hand: [aheadBegin, aheadEnd) of `ahead`.
    std::unique_ptr<char[]> ahead;
    size_t aheadBegin = 0, aheadEnd = 0;
    bool hasAhead() const { return aheadBegin < aheadEnd; }
  };
  uint64_t minReceived() const;
  bool pump(int i, Status* error);
  bool pumpStreams(int first, int last, Status* error, FdSet* waiting);
  bool pumpThread(int thread);

  std::vector<Stream> streams_;
  HostBuffer slots_;
  size_t slotBytes_;
  uint64_t nslots_;
  SocketStreams config_;
  std::string peerName_;
  std::atomic<int> reportedFailure_{-1};
  std::atomic<size_t> streamsDone_{0};  // streams closed, failed or noticed
  std::atomic<uint64_t> consumed_{0};
  uint64_t sizes_[64] = {};  // written by stream 0's reader, read once complete
  StreamDriver driver_;
};

}  // namespace tutti
