// Exchange over TCP: rendezvous at the root, then direct connections between
// ranks (opened on first use) carrying tagged messages.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "src/bootstrap/exchange.h"
#include "src/bootstrap/unique_id.h"
#include "src/common/interfaces.h"
#include "src/common/newcomers.h"
#include "src/common/socket.h"

namespace tutti {

class SocketBootstrap final : public Exchange {
 public:
  // Joins the rendezvous; fails with a timeout naming the root when it cannot be
  // reached or rejects us, and with InvalidArgument when the root refuses our rank.
  static Result<std::unique_ptr<SocketBootstrap>> create(const BootstrapHandle& handle, int rank,
                                                         int nranks, const NetInterface& iface,
                                                         double timeoutSeconds,
                                                         const std::atomic<bool>* abort,
                                                         uint16_t progressPort = 0);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(peers_.size()); }
  Status send(int peer, int tag, const void* data, size_t bytes) override;
  Status recv(int peer, int tag, void* data, size_t bytes) override;
  Status allgather(void* data, size_t bytes) override;
  Status barrier() override;

  // From now on the communicator's abort flag no longer ends waits here:
  // after a revoke, survivors still agree on a new membership over this
  // channel (tuttiCommShrink). Only while no other thread uses it.
  void ignoreAbort() { abort_ = nullptr; }

  const std::vector<RankInfo>& peers() const { return peers_; }
  uint64_t magic() const { return magic_; }
  // "rank 3 (host:pid 1234)": how errors name a peer.
  std::string describePeer(int peer) const;

 private:
  struct Header {
    uint64_t magic;
    int32_t from;
    int32_t tag;
    uint64_t bytes;
  };
  using Message = std::vector<char>;
  struct Incoming {  // the message being read from one peer
    Header header{};
    size_t headerGot = 0;
    Message payload;
    size_t payloadGot = 0;
  };
  // Bootstrap messages are connection handles and small tables; a header
  // announcing more is refused before anything is allocated.
  static constexpr uint64_t kMaxMessageBytes = 64ull << 20;

  SocketBootstrap() = default;
  Status rendezvous(const BootstrapHandle& handle, RankInfo self, Deadline deadline);
  Status sendLocked(int peer, int tag, const void* data, size_t bytes);
  Status recvLocked(int peer, int tag, void* data, size_t bytes);
  // Waits for any incoming message (or connection) and stashes it; also
  // returns once `sending` has room.
  Status pump(Deadline deadline, const Socket* sending = nullptr);
  void closeIncoming(int peer, const Status& why);
  Status sendPumping(int peer, const void* data, size_t bytes, Deadline deadline);
  Status readArrived(int peer);
  // What is wrong with a header read from the network; "" when it is sound.
  std::string checkHeader(const Header& h, int expectFrom) const;
  Status checkTable(const SocketAddress& root);
  Deadline deadline() const { return Deadline::after(timeoutSeconds_); }

  int rank_ = -1;
  uint64_t magic_ = 0;
  double timeoutSeconds_ = 0;
  const std::atomic<bool>* abort_ = nullptr;
  Socket listener_;
  std::unique_ptr<Newcomers> newcomers_;  // accepted, not yet identified
  std::vector<RankInfo> peers_;
  std::vector<Socket> out_;  // to each peer, connected on first send
  std::vector<Socket> in_;   // from each peer, accepted as it arrives
  std::vector<Incoming> incoming_;  // per peer
  std::vector<std::string> gone_;   // why a peer's connection closed; "" while open
  std::map<std::pair<int, int>, std::deque<Message>> stash_;  // (from, tag)
  std::mutex mutex_;
};

}  // namespace tutti
