// A communicator: one rank's view of a group of ranks. Owns the bootstrap,
// the transports, the node layout and cost model, and every connection (rings
// made at init, tree and send/recv edges on first use); turns calls into
// plans and Work for the executor.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/dtype.h"
#include "src/bootstrap/socket_bootstrap.h"
#include "src/comm/comm_config.h"
#include "src/comm/connection_table.h"
#include "src/comm/connector.h"
#include "src/exec/executor.h"
#include "src/common/host_buffer.h"
#include "src/device/device_runtime.h"
#include "src/plan/layout.h"
#include "src/plan/plan.h"
#include "src/plan/tree.h"
#include "src/plan/tuner.h"
#include "src/topo/topology.h"
#include "transport/transport.h"
#include "tutti/tutti.h"

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
  bool onDevice = false;        // buffers in device memory: stream-ordered
  DeviceStream stream = nullptr;  // the caller's cudaStream_t (device buffers only)
};

// What the caller of init may set beyond the environment.
struct CommOptions {
  double timeoutSeconds = 0;  // 0: TUTTI_TIMEOUT
  std::string name;           // shown in errors; empty: none
  int device = -1;            // the CUDA device bound at init; -1: host-only
};

class DeviceStaging;
class DeviceDirect;

// A second set of connections beside the communicator's own: one transport
// for every peer, its own slot size (P2P between devices).
struct LinkSet {
  ConnectionTable* table = nullptr;
  Transport* transport = nullptr;
  size_t slotBytes = 0;
  uint32_t idBits = 0;  // or'ed into connection ids: its handles travel under their own tags
};

class Communicator final : public Links {
 public:
  static Result<std::unique_ptr<Communicator>> create(const BootstrapHandle& handle, int nranks,
                                                      int rank, const CommOptions& options = {});
  ~Communicator() override;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const CommConfig& config() const { return config_; }
  const std::string& name() const { return name_; }
  // The CUDA device this communicator serves (-1: host memory only).
  int device() const { return device_; }
  // Stages device buffers through pinned host memory (made on first use).
  Result<DeviceStaging*> staging();
  // Runs device buffers GPU to GPU; null when some pair of ranks cannot
  // (then device calls are staged). Decided alike on every rank at init.
  DeviceDirect* direct() const { return direct_.get(); }
  // The API handle this communicator lives in (groups find non-blocking
  // communicators' background threads through it).
  tuttiComm_t apiHandle() const { return apiHandle_; }
  void setApiHandle(tuttiComm_t handle) { apiHandle_ = handle; }
  // Two bytes a barrier all-reduces (max): they outlive any queued call.
  uint8_t* barrierBytes() { return barrierBytes_; }
  // The out-of-band channel to every rank (tuttiCommSplit's exchanges).
  Exchange& bootstrap() { return *bootstrap_; }
  // What each rank said of itself at rendezvous (host, pid).
  const std::vector<RankInfo>& peers() const { return bootstrap_->peers(); }

  // Fills plan and work for one call: the cost model picks the algorithm,
  // channels and chunk. Counts the call (sequence numbers in errors).
  // Device calls of a GPU-to-GPU communicator get direct()'s links.
  Status prepare(const CollectiveArgs& args, Plan* plan, Work* work);
  // The plan alone (the cost model's choice), and the scratch it needs.
  TuneChoice planCall(const CollectiveArgs& args, Plan* plan);
  size_t scratchBytes(const CollectiveArgs& args, const Plan& plan) const;
  // Registers with the connector every connection the plan uses that does not
  // exist yet (in `set`, else the communicator's own); the caller runs its
  // phases (across communicators in a group). False when nothing is missing.
  bool requestConnections(const Plan& plan, Connector* connector, const LinkSet* set = nullptr);
  // One step per channel naming both ring neighbours: the connections made at init.
  Plan ringEdges() const;
  Plan* scratchPlan() { return &scratchPlan_; }
  ExecOptions execOptions() const { return {config_.spinCount, config_.timeoutSeconds}; }

  // Links
  SendConnection* sendTo(int channel, int peer) override;
  RecvConnection* recvFrom(int channel, int peer) override;
  std::string describePeer(int peer) const override;
  void notifyFailure(int failedRank) override;
  int reportedFailure(double graceSeconds) override { return connections_.reportedFailure(graceSeconds); }

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
  Status init(const BootstrapHandle& handle, int nranks, int rank, const CommOptions& options);
  Status checkSameConfig();
  Result<std::vector<std::string>> swapAddresses(const std::string& mine);
  Status connectRings();
  Status gatherLayout(const TopoGraph& topo, const std::vector<NetInterface>& ifaces, int cores);
  void preferNicsNearDevice(const TopoGraph& topo, std::vector<NetInterface>* ifaces) const;
  Status setUpDeviceDirect();
  ConnectionSpec specFor(int channel, int peer) const;
  Transport* transportFor(int peer) const;

  int rank_ = 0;
  int nranks_ = 1;
  std::string name_;
  int device_ = -1;
  std::unique_ptr<DeviceStaging> staging_;
  std::unique_ptr<DeviceDirect> direct_;
  tuttiComm_t apiHandle_ = nullptr;
  uint8_t barrierBytes_[2] = {0, 0};
  CommConfig config_;
  uint64_t magic_ = 0;
  std::unique_ptr<SocketBootstrap> bootstrap_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<Transport*> peerTransport_;
  int nics_ = 1;  // interfaces the socket transport listens on; channels spread over them
  NodeLayout layout_;
  std::vector<std::vector<int>> rings_;  // ring order per channel
  TuneContext tuning_;
  TreeLinks allReduceTrees_[2];  // this rank's links in both unrooted trees
  // The cost model's answer per (collective, bytes): searching is microseconds,
  // a small-message call must not pay it every time. Identical on every rank.
  std::unordered_map<uint64_t, TuneChoice> tuneCache_;
  ConnectionTable connections_;
  HostBuffer scratch_;  // tree reduce's partial sums at ranks other than the root
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
