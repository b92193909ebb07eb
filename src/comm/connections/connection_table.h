// Every connection of a communicator, by (memory, channel, peer) and
// direction: rings, trees, send/recv (channel kP2PChannel) and one-shot (kOneShotChannel) of host and
// device calls all draw from it, so an edge two algorithms share is one
// connection. Sized once, so the slots a Connector fills keep their address.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "src/common/clock.h"
#include "src/plan/plan.h"
#include "transport/transport.h"

namespace tutti {

constexpr int kMaxChannels = 32;
// Ring channels, send/recv's (kP2PChannel) and one-shot's (kOneShotChannel).
constexpr int kChannelSlots = kMaxChannels - kOneShotChannel;

// The slot memory a communicator's connections hold, counted as each is
// made, so a query never walks a table a connector is filling. A shared
// segment is mapped by both its ends and counted by each.
struct MemoryTally {
  std::atomic<size_t> hostBytes{0};
  std::atomic<size_t> deviceBytes{0};
  std::atomic<int> connections{0};

  void add(const SlotRegion& r) {
    (r.onDevice ? deviceBytes : hostBytes).fetch_add(r.bytes, std::memory_order_relaxed);
    connections.fetch_add(1, std::memory_order_relaxed);
  }
  void clear() {
    hostBytes.store(0);
    deviceBytes.store(0);
    connections.store(0);
  }
};

class ConnectionTable {
 public:
  void reset(int nranks) {
    nranks_ = nranks;
    send_.clear();
    recv_.clear();
    send_.resize(static_cast<size_t>(kMemoryKinds) * kChannelSlots * nranks);
    recv_.resize(static_cast<size_t>(kMemoryKinds) * kChannelSlots * nranks);
    tally_.clear();
  }
  MemoryTally& tally() { return tally_; }
  const MemoryTally& tally() const { return tally_; }
  bool valid(int channel, int peer) const {
    return channel >= kOneShotChannel && channel < kMaxChannels && peer >= 0 && peer < nranks_;
  }
  SendConnection* send(Memory m, int channel, int peer) const {
    return valid(channel, peer) ? send_[index(m, channel, peer)].get() : nullptr;
  }
  RecvConnection* recv(Memory m, int channel, int peer) const {
    return valid(channel, peer) ? recv_[index(m, channel, peer)].get() : nullptr;
  }
  std::unique_ptr<SendConnection>* sendSlot(Memory m, int channel, int peer) { return &send_[index(m, channel, peer)]; }
  std::unique_ptr<RecvConnection>* recvSlot(Memory m, int channel, int peer) { return &recv_[index(m, channel, peer)]; }

  template <typename F>
  void forEach(F&& f) {
    for (auto& s : send_) if (s) f(*s);
    for (auto& r : recv_) if (r) f(*r);
  }
  // The connections of one memory kind only.
  template <typename F>
  void forEach(Memory m, F&& f) {
    const size_t per = static_cast<size_t>(kChannelSlots) * nranks_;
    const size_t first = static_cast<size_t>(m) * per;
    for (size_t i = first; i < first + per && i < send_.size(); ++i) {
      if (send_[i]) f(*send_[i]);
      if (recv_[i]) f(*recv_[i]);
    }
  }

  // The failed rank a failure notice on any connection names, polling the
  // peers (checkPeer reads notices that wait outside the data) for up to
  // `graceSeconds`; -1 when none comes.
  int reportedFailure(double graceSeconds) {
    Deadline deadline = Deadline::after(graceSeconds);
    for (;;) {
      int failed = -1;
      forEach([&failed](auto& c) {
        if (failed >= 0) return;
        (void)c.checkPeer();
        failed = c.reportedFailure();
      });
      if (failed >= 0 || deadline.expired()) return failed;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // The receiver's id for the connection `sender` sends it on `channel`
  // for calls on `m`: unique per receiver, and the tag its handle travels under.
  static uint32_t connectionId(Memory m, int channel, int sender) {
    return (static_cast<uint32_t>(m) << 30) | (static_cast<uint32_t>(channel - kOneShotChannel) << 22) |
           static_cast<uint32_t>(sender);
  }

 private:
  size_t index(Memory m, int channel, int peer) const {
    return (static_cast<size_t>(m) * kChannelSlots + (channel - kOneShotChannel)) * nranks_ + peer;
  }
  int nranks_ = 0;
  MemoryTally tally_;
  std::vector<std::unique_ptr<SendConnection>> send_;
  std::vector<std::unique_ptr<RecvConnection>> recv_;
};

}  // namespace tutti
