// The transport interface. A Connection moves chunks in order in one
// direction between two ranks through a ring of fixed-size slots: the sender
// acquires a slot, fills it and posts it; the receiver peeks at the oldest
// posted slot, consumes it where it lies and releases it. Whether a slot lives
// in shared memory (zero extra copies) or is carried by TCP is the transport's
// business; the executor sees only this.
//
// The memory a call's buffers live in is part of the request: a connection
// for device calls has slots the device's kernels can reach (device memory,
// or page-locked host memory mapped into the device), and the communicator
// orders its slots with the device's stream (transport/stream_ordered.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/bootstrap/rank_info.h"
#include "src/common/status.h"

namespace tutti {

class DeviceRuntime;
struct WakeWord;
using DeviceStream = void*;

// Swaps this rank's blob for every rank's (indexed by rank), over the
// communicator's bootstrap: how a transport that needs every rank's address
// (UCX's worker address) gets them.
using AllgatherBlobs = std::function<Result<std::vector<std::string>>(const std::string& mine)>;

// Where a call's buffers live.
enum class Memory : uint8_t { kHost = 0, kDevice = 1 };
constexpr int kMemoryKinds = 2;
inline const char* memoryName(Memory m) { return m == Memory::kDevice ? "device" : "host"; }

// A connection's slot ring, so a device can be given access to it.
struct SlotRegion {
  void* base = nullptr;
  size_t bytes = 0;
  bool onDevice = false;  // device memory already (P2P, GPUDirect)
  // A NIC writes received chunks here (GPUDirect RDMA into device memory):
  // they are flushed to the GPU before a kernel reads them.
  bool writtenByNic = false;
};

class SendConnection {
 public:
  virtual ~SendConnection() = default;
  // The slot for the chunk `ahead` places after the next one to be posted,
  // or nullptr while it is still in flight (ahead < the ring's slots). A
  // device writes several slots before the host posts the first.
  virtual void* acquire(size_t* capacity, uint32_t ahead = 0) = 0;
  // Publishes the acquired slot holding `bytes` bytes.
  virtual Status post(size_t bytes) = 0;
  // Transports that can send straight from the caller's memory (sockets) take
  // the chunk by reference instead of as a copy in the acquired slot; the
  // bytes must stay unchanged until flushed().
  virtual bool sendsByReference() const { return false; }
  virtual Status postReference(const void* data, size_t bytes) {
    (void)data;
    (void)bytes;
    return InternalError("this transport cannot send by reference");
  }
  // The same, followed by an 8-byte tag the connection keeps (the one-shot
  // channel's call signature): the peer receives one chunk of bytes + 8,
  // and the bytes never pass through a slot.
  virtual bool sendsTaggedByReference() const { return false; }
  virtual Status postTaggedReference(const void* data, size_t bytes, uint64_t tag) {
    (void)data;
    (void)bytes;
    (void)tag;
    return InternalError("this transport cannot send a tagged chunk by reference");
  }
  // Moves pending bytes (socket) without blocking.
  virtual Status progress() = 0;
  // True when everything posted has left this process.
  virtual bool flushed() const = 0;
  // Slow-path health check: is the peer still there, has it reported a failure?
  virtual Status checkPeer() = 0;
  // Tells the peer (best effort) that this rank gives up because `failedRank` failed.
  virtual void notifyFailure(int failedRank) = 0;
  // The failed rank the peer reported through notifyFailure, or -1.
  virtual int reportedFailure() const = 0;
  // A descriptor that turns writable when acquire() may succeed again, so an
  // idle rank can sleep in poll() instead of retrying; -1 when there is none.
  virtual int pollFd() const { return -1; }
  // Where an idle rank may sleep instead of retrying: a word the peer wakes
  // after it frees a slot (WakeWord::sleepOnAny). Null when the connection
  // moves bytes only when polled: then it must be polled.
  virtual WakeWord* wakeWord() { return nullptr; }
  // Whether the peer freed a slot since acquire() last found none.
  virtual bool peerMoved() const { return true; }
  virtual SlotRegion slots() const = 0;
};

class RecvConnection {
 public:
  virtual ~RecvConnection() = default;
  // The oldest received chunk not yet released (`ahead` places further on)
  // and its size, or nullptr while it is not complete.
  virtual const void* peek(size_t* bytes, uint32_t ahead = 0) = 0;
  // The peeked chunk has been consumed; its slot may be reused.
  virtual Status release() = 0;
  virtual Status progress() = 0;
  virtual Status checkPeer() = 0;
  virtual void notifyFailure(int failedRank) = 0;
  virtual int reportedFailure() const = 0;
  // A descriptor that turns readable when peek() may succeed; -1 when none.
  virtual int pollFd() const { return -1; }
  // As SendConnection's: a word the peer wakes after it posts a chunk, and
  // whether it posted one since peek() last found none.
  virtual WakeWord* wakeWord() { return nullptr; }
  virtual bool peerMoved() const { return true; }
  virtual SlotRegion slots() const = 0;
};

// Everything a transport needs to set up one connection.
struct ConnectionSpec {
  const RankInfo* self = nullptr;
  const RankInfo* peer = nullptr;
  uint64_t commMagic = 0;  // unique per communicator: names shared segments
  uint32_t connectionId = 0;  // unique per (communicator, receiver)
  size_t slotBytes = 0;
  int nslots = 0;
  double timeoutSeconds = 0;
  const std::atomic<bool>* abort = nullptr;
  int nic = 0;  // which of the transport's interfaces the receiver listens on
  Memory memory = Memory::kHost;  // where the calls' buffers live
  int device = -1;                // this rank's device (device calls)
};

// "rank 3 (host)": how transports name the other end in errors.
inline std::string peerName(const ConnectionSpec& spec) {
  return "rank " + std::to_string(spec.peer->rank) + " (" + spec.peer->hostname + ")";
}

// Opaque bytes the receiver's listen() gives the sender's connect().
struct ConnectionHandle {
  char bytes[192] = {0};
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // What both ends of its connections must share, in words naming the
  // variables ("2 sockets per connection (TUTTI_NSOCKS_PERTHREAD ...)"); init
  // checks that every rank has the same (createTransports). "" for nothing.
  virtual std::string settings() const { return ""; }
  // Whether this transport can carry calls on `memory` between the two ranks.
  virtual bool canConnect(const RankInfo& self, const RankInfo& peer, Memory memory) const = 0;
  // Where its slots for calls on `memory` live, for logs: "host",
  // "host-mapped", "device", "device (GDR)".
  virtual const char* slotPlace(Memory memory) const {
    return memory == Memory::kDevice ? "host-mapped" : "host";
  }
  // Receiver side, first: creates its end and the handle for the sender.
  virtual Result<std::unique_ptr<RecvConnection>> listen(const ConnectionSpec& spec,
                                                         ConnectionHandle* handle) = 0;
  // Sender side, with the handle the receiver sent over the bootstrap.
  virtual Result<std::unique_ptr<SendConnection>> connect(const ConnectionSpec& spec,
                                                          const ConnectionHandle& handle) = 0;
  // Receiver side, last: completes once the sender has connected.
  virtual Status accept(const ConnectionSpec& spec, RecvConnection& connection) = 0;
};

}  // namespace tutti
