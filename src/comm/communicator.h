// A communicator: one rank's view of a group of ranks. Owns the bootstrap,
// the transports, the ring connections of every channel and the send/recv
// connections made on first use; turns calls into Work for the executor.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "src/bootstrap/socket_bootstrap.h"
#include "src/comm/comm_config.h"
#include "src/comm/connector.h"
#include "src/exec/executor.h"
#include "src/plan/plan.h"
#include "transport/transport.h"

namespace tutti {

// One call's parameters, as the API layer checked them.
struct CollectiveArgs {
  Collective collective = Collective::kAllReduce;
  const void* input = nullptr;
  void* output = nullptr;
  size_t count = 0;
  DataType dtype = DataType::kFloat32;
  RedOp op = RedOp::kSum;
  int root = 0;  // broadcast, reduce; the peer for send and recv
};

class Communicator final : public Links {
 public:
  static Result<std::unique_ptr<Communicator>> create(const BootstrapHandle& handle, int nranks,
                                                      int rank);
  ~Communicator() override;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const CommConfig& config() const { return config_; }

  // Fills plan and work for one call. Counts the call (sequence numbers in errors).
  void prepare(const CollectiveArgs& args, Plan* plan, Work* work);
  // Send/recv connections to `peer` that do not exist yet are registered with
  // the connector; the caller runs its phases (across communicators in a group).
  void requestP2P(Collective kind, int peer, Connector* connector);
  // Whether the send (or recv) connection to `peer` exists already.
  bool hasP2P(Collective kind, int peer) const {
    return kind == Collective::kSend ? p2pSend_[peer] != nullptr : p2pRecv_[peer] != nullptr;
  }
  Plan* scratchPlan() { return &scratchPlan_; }
  ExecOptions execOptions() const { return {config_.spinCount, config_.timeoutSeconds}; }

  // Links
  SendConnection* sendTo(int channel, int peer) override;
  RecvConnection* recvFrom(int channel, int peer) override;
  std::string describePeer(int peer) const override;
  void notifyFailure(int failedRank) override;

  // Errors and lifetime.
  std::atomic<bool>& abortFlag() { return abort_; }
  std::atomic<int>& activeCalls() { return activeCalls_; }
  void setLastError(const std::string& message);
  std::string lastError() const;
  void setAsyncError(Code code);
  Code asyncError() const { return asyncError_.load(); }
  uint64_t lastSequence() const { return sequence_; }

 private:
  Communicator() = default;
  Status init(const BootstrapHandle& handle, int nranks, int rank);
  Status checkSameConfig();
  Status connectRings();
  Transport* transportFor(int peer) const;
  int channelsFor(size_t bytes) const;

  int rank_ = 0;
  int nranks_ = 1;
  CommConfig config_;
  uint64_t magic_ = 0;
  std::unique_ptr<SocketBootstrap> bootstrap_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<Transport*> peerTransport_;
  std::vector<std::unique_ptr<SendConnection>> ringSend_;  // per channel, to rank+1
  std::vector<std::unique_ptr<RecvConnection>> ringRecv_;  // per channel, from rank-1
  std::vector<std::unique_ptr<SendConnection>> p2pSend_;   // per peer
  std::vector<std::unique_ptr<RecvConnection>> p2pRecv_;   // per peer
  Plan scratchPlan_;
  uint64_t sequence_ = 0;
  std::atomic<bool> abort_{false};
  std::atomic<int> activeCalls_{0};
  std::atomic<Code> asyncError_{Code::kOk};
  mutable std::mutex errorMutex_;
  std::string lastError_;

  friend class Connector;
};

}  // namespace tutti
