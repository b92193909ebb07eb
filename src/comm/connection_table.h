// Every connection of a communicator, by (channel, peer) and direction:
// rings, trees and send/recv (channel kP2PChannel) all draw from it, so an
// edge two algorithms share is one connection. Sized once, so the slots a
// Connector fills keep their address.
#pragma once

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

class ConnectionTable {
 public:
  void reset(int nranks) {
    nranks_ = nranks;
    send_.clear();
    recv_.clear();
    send_.resize(static_cast<size_t>(kMaxChannels + 1) * nranks);
    recv_.resize(static_cast<size_t>(kMaxChannels + 1) * nranks);
  }
  bool valid(int channel, int peer) const {
    return channel >= kP2PChannel && channel < kMaxChannels && peer >= 0 && peer < nranks_;
  }
  SendConnection* send(int channel, int peer) const {
    return valid(channel, peer) ? send_[index(channel, peer)].get() : nullptr;
  }
  RecvConnection* recv(int channel, int peer) const {
    return valid(channel, peer) ? recv_[index(channel, peer)].get() : nullptr;
  }
  std::unique_ptr<SendConnection>* sendSlot(int channel, int peer) { return &send_[index(channel, peer)]; }
  std::unique_ptr<RecvConnection>* recvSlot(int channel, int peer) { return &recv_[index(channel, peer)]; }

  template <typename F>
  void forEach(F&& f) {
    for (auto& s : send_) if (s) f(*s);
    for (auto& r : recv_) if (r) f(*r);
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

  // The receiver's id for the connection `sender` sends it on `channel`:
  // unique per receiver, and the tag its handle travels under.
  static uint32_t connectionId(int channel, int sender) {
    return (static_cast<uint32_t>(channel + 1) << 20) | static_cast<uint32_t>(sender);
  }

 private:
  size_t index(int channel, int peer) const {
    return static_cast<size_t>(channel + 1) * nranks_ + peer;
  }
  int nranks_ = 0;
  std::vector<std::unique_ptr<SendConnection>> send_;
  std::vector<std::unique_ptr<RecvConnection>> recv_;
};

}  // namespace tutti
