// A communicator: one rank's view of a group of ranks. Owns the bootstrap,
// the planner and the connections (rings made at init, tree and send/recv
// edges on first use, for host and device calls alike); turns calls into
// plans and Work for the executor. A device call differs only in its
// connections (stream-ordered) and its reducer (kernels on tutti's stream).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "src/bootstrap/socket_bootstrap.h"
#include "src/comm/collective_args.h"
#include "src/comm/comm_config.h"
#include "src/comm/comm_health.h"
#include "src/comm/connections/connections.h"
#include "src/comm/device_calls/device_calls.h"
#include "src/comm/last_call.h"
#include "src/comm/small_calls/small_calls.h"
#include "src/comm/tuning/kept_calls.h"
#include "src/common/call_record.h"
#include "src/common/doorbell.h"
#include "src/common/host_buffer.h"
#include "src/common/log.h"
#include "src/exec/executor.h"
#include "src/plan/call_planner.h"
#include "src/topo/topology.h"
#include "tutti/tutti.h"

namespace tutti {

// What the caller of init may set beyond the environment.
struct CommOptions {
  double timeoutSeconds = 0;  // 0: TUTTI_TIMEOUT
  std::string name;           // shown in errors; empty: none
  int device = -1;            // the CUDA device bound at init; -1: host-only
  int deterministic = -1;     // 0 or 1; -1: TUTTI_DETERMINISTIC
  bool callsBesideCompute = false;  // tuttiConfig_t::callsBesideCompute
};

class Communicator final : public Peers {
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
  // The slot memory this rank's connections hold: the rings' from init,
  // the rest from the first call whose plan needs them.
  const MemoryTally& memoryHeld() const { return connections_.table().tally(); }
  // That, in words, with the settings that make it.
  std::string describeMemory() const;
  // The API handle this communicator lives in (groups find non-blocking
  // communicators' background threads through it).
  tuttiComm_t apiHandle() const { return apiHandle_; }
  void setApiHandle(tuttiComm_t handle) { apiHandle_ = handle; }
  // Two bytes a barrier all-reduces (max): they outlive any queued call.
  uint8_t* barrierBytes() { return barrierBytes_; }
  // The out-of-band channel to every rank (tuttiCommSplit's exchanges).
  Exchange& bootstrap() { return *bootstrap_; }
  // The channel survivors agree on a new membership over, also after a
  // revoke (tuttiCommShrink), and how many shrinks came before.
  Exchange& membershipChannel() {
    bootstrap_->ignoreAbort();
    return *bootstrap_;
  }
  int nextShrinkRound() { return shrinks_++; }
  // What each rank said of itself at rendezvous (host, pid).
  const std::vector<RankInfo>& peers() const { return bootstrap_->peers(); }
  // Where every rank sits (nodes), as the planner sees it.
  const NodeLayout& layout() const { return planner_.layout(); }
  // The cost model's inputs (measured ones at init: link_probe.h).
  void setTuning(const TuneContext& tuning) { planner_.setTuning(tuning); }

  // Fills plan and work for one call: the cost model picks the algorithm,
  // channels and chunk. Counts the call (sequence numbers in errors).
  Status prepare(const CollectiveArgs& args, Plan* plan, Work* work);
  // The latest host collective (tuttiCommLastChoice), and the cost model's
  // choice for it (asked again: the planner keeps its answers).
  struct LastChoice {
    LastCall call;
    TuneChoice choice;
  };
  LastChoice lastChoice() {
    const LastCall call = lastCall_.load();
    return {call, call.sequence ? planner_.choose(call.shape) : TuneChoice{}};
  }
  // TUTTI_DEBUG_SUBSYS=TUNING: the call prepare() last planned took this
  // long; logged beside the cost model's prediction.
  void logTook(const CollectiveArgs& args, double tookUs) const;
  // Rank 0 of several nodes (TUTTI_KEEP_CALL_TIMES): whether a host
  // all-reduce is timed, and its time kept for the next communicator of
  // this shape (tuning/kept_calls.h) once it ran.
  bool keepsTimeOf(const CollectiveArgs& a) const {
    return !keptPath_.empty() && !a.internal && !a.onDevice && a.collective == Collective::kAllReduce;
  }
  void keepTime(const CollectiveArgs& args, double tookUs);
  // Publishes `args` (a collective) as the call this rank is about to enter,
  // before tutti's own calls that precede it (TUTTI_CHECK_CALLS): a rank
  // that waits there shows what it is about to call.
  void announce(const CollectiveArgs& args) {
    health_.progress().mine().enter(args.signature(sequence_ + 1));
  }
  // Registers with the connector every connection the plan uses for calls
  // on `m` that does not exist yet; the caller runs its phases (across
  // communicators in a group). False when nothing is missing.
  bool requestConnections(const Plan& plan, Memory m, Connector* connector) {
    return connections_.request(plan, m, connector);
  }
  Plan* scratchPlan() { return &scratchPlan_; }
  // Whether the host block takes the call: the cost model chose one-shot
  // and it fits a slot (host calls made one at a time, not grouped).
  bool onHostBlock(const CollectiveArgs& a) {
    return small_ && small_->takes(a, [&] {
             return planner_.choose({a.collective, a.count, dtypeSize(a.dtype), a.root, a.onDevice});
           });
  }
  // Runs such a call there: numbers it, and nothing else; the block
  // publishes its progress. Inline, the log lines apart: this is every
  // small call's way.
  Status runOnHostBlock(const CollectiveArgs& a) {
    ++sequence_;
    lastCall_.store({a.collective, a.count, dtypeSize(a.dtype), a.root, false}, true, sequence_);
    if (log_detail::enabled(LogLevel::kInfo, kSubsysTuning | kSubsysColl)) logHostBlockCall(a);
    return small_->run(a, sequence_);
  }
  ExecOptions execOptions() const {
    return {config_.spinCount, config_.timeoutSeconds, config_.matchCheckSeconds, config_.socketYieldRounds,
            config_.sharedMemoryYieldRounds, config_.yieldUsBeforeSleep};
  }

  // Device calls. Whether the connections and device scratch the calls
  // need exist; if not, the caller makes them with reserveForDevice on its
  // own thread, with no earlier call of the communicator left, before any
  // gate holds a stream: connecting waits for peers, and freeing device
  // memory waits for the whole device.
  bool readyForDevice(const std::vector<CollectiveArgs>& calls);
  struct DeviceBatch {
    Communicator* comm;
    const std::vector<CollectiveArgs>* calls;
  };
  // Several communicators at once (a group), so ranks sharing a thread connect together.
  static Status reserveForDevice(const std::vector<DeviceBatch>& batches);
  // Runs the calls (their buffers on this communicator's device) together,
  // blocking until the results are in device memory.
  Status runOnDevice(const std::vector<CollectiveArgs>& calls);
  // The stream, gates and scratch of device calls (nullptr: host-only, or
  // no device call yet where the device had no context at init).
  DeviceCalls* deviceCalls() { return deviceCalls_.get(); }

  // Peers
  SendConnection* sendTo(Memory m, int channel, int peer) override { return connections_.send(m, channel, peer); }
  RecvConnection* recvFrom(Memory m, int channel, int peer) override { return connections_.recv(m, channel, peer); }
  std::string describePeer(int peer) const override;
  void notifyFailure(int failedRank) override;
  // This rank revoked the communicator: peers' calls end, and host-mates
  // waiting on the host block say it was a revoke (the network's notice
  // names this rank as failed).
  void notifyRevoked();
  int reportedFailure(double graceSeconds) override { return connections_.table().reportedFailure(graceSeconds); }
  HangReport explainHang(const std::string& event, int noticed) override;
  // `failed`, from making the connections a call first needs, or better:
  // when the ranks' progress shows a stopped rank, another call or a rank
  // that never entered this one, the call fails naming it, and every rank
  // hears the verdict (as after a timeout).
  Status explainSetupFailure(const Status& failed);
  void blame(const HangReport& why) override;
  void callEnded(uint64_t sequence, Code result) override;
  HangReport verdictOfPeer(int* by) override;
  const Doorbell* doorbell() const override { return doorbell_.get(); }

  FlightRecorder& recorder() { return health_.recorder(); }
  // Errors and lifetime.
  std::atomic<bool>& abortFlag() { return health_.abortFlag(); }
  std::atomic<int>& activeCalls() { return health_.activeCalls(); }
  void setLastError(const std::string& message) { health_.setLastError(message); }
  std::string lastError() const { return health_.lastError(); }
  void setAsyncError(Code code) { health_.setAsyncError(code); }
  Code asyncError() const { return health_.asyncError(); }
  uint64_t lastSequence() const { return sequence_; }
  // The ranks named as the cause of a failure, by this rank or by the
  // verdict another rank told it, and those whose process is gone or
  // stopped, or whose host does not answer (never this rank itself).
  std::set<int> failedRanks();

 private:
  Communicator() = default;
  Status init(const BootstrapHandle& handle, int nranks, int rank, const CommOptions& options);
  Status checkSameConfig();
  Result<std::vector<std::string>> swapAddresses(const std::string& mine);
  Result<std::vector<std::string>> gatherBusIds();
  Status gatherLayout(const TopoGraph& topo, const std::vector<NetInterface>& ifaces, int cores);
  void preferNicsNearDevice(const TopoGraph& topo, std::vector<NetInterface>* ifaces) const;
  Status connectInitEdges(bool device);
  // Several nodes: the cost model takes the links' measured costs (link_probe.h).
  Status measureLinkCosts();
  // What earlier runs of this shape kept (rank 0 reads it), in every rank's calibration.
  Status addKeptCallTimes(TuneContext* tuning);
  std::string keptCallsShape() const;
  // The device side (DeviceCalls) when init left it for the first device
  // call; reserveForDevice makes it, before any gate.
  Status makeDeviceSide();
  // One host, few ranks, shared memory (the planner's hostBlock): rank 0
  // makes the host block small calls meet in, then the others map it (`open`).
  Status makeHostBlock(bool open);
  // The cost model's choice for the call, and its plan (with the scratch it needs).
  TuneChoice planCall(const CollectiveArgs& args, Plan* plan);
  void logHostBlockCall(const CollectiveArgs& a) const;  // runOnHostBlock's log lines

  int rank_ = 0;
  int nranks_ = 1;
  std::string name_;
  int device_ = -1;
  int gpuSharers_ = 0;  // ranks of this communicator on this node's device_ (the worker's grid)
  CommConfig config_;
  std::unique_ptr<SocketBootstrap> bootstrap_;
  CallPlanner planner_;
  double predictedUs_ = 0;  // the last planned host collective's (logTook)
  Algorithm plannedAlgorithm_ = Algorithm::kRing;  // and its algorithm (keepTime)
  CallTimes callTimes_;      // rank 0's large all-reduces, for keptPath_
  std::string keptShape_, keptPath_;  // rank 0 of several nodes, keeping times only
  LastCallRecord lastCall_;
  std::unique_ptr<DeviceCalls> deviceCalls_;  // device communicators only
  std::unique_ptr<SmallCalls> small_;  // communicators of one host only
  std::unique_ptr<Doorbell> doorbell_;  // ranks outnumbering their cores, of several nodes
  Connections connections_;
  HostBuffer scratch_;  // partial sums a call keeps off its output (Plan::scratchBytes)
  Plan scratchPlan_;
  std::vector<Plan> devicePlans_;  // reused: a steady device call allocates nothing
  std::vector<Work> deviceWorks_;
  uint64_t sequence_ = 0;
  CommHealth health_;
  tuttiComm_t apiHandle_ = nullptr;
  uint8_t barrierBytes_[2] = {0, 0};
  int shrinks_ = 0;
};

}  // namespace tutti
