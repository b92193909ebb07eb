#include "src/comm/device_direct.h"

#include <algorithm>

#include "src/comm/connector.h"
#include "src/comm/group.h"
#include "src/common/log.h"
#include "transport/p2p/transport.h"

namespace tutti {

Result<std::unique_ptr<DeviceDirect>> DeviceDirect::create(Communicator& comm,
                                                           const std::vector<std::string>& busIds) {
  // What every rank can tell alike from the gathered facts: one node, a
  // device on every rank, P2P allowed.
  const auto& peers = comm.peers();
  bool candidate = !comm.config().p2pDisabled;
  for (int p = 0; p < comm.size() && candidate; ++p)
    candidate = !busIds[p].empty() && peers[p].hostHash == peers[0].hostHash;
  if (!candidate) return std::unique_ptr<DeviceDirect>();
  // Whether this rank's device reaches every other is its own to say.
  DeviceRuntime& rt = deviceRuntime();
  TUTTI_ASSIGN_OR_RETURN(DeviceStream stream, rt.createStream());
  std::unique_ptr<DeviceDirect> direct(new DeviceDirect(comm, rt, stream));
  direct->p2p_ = std::make_unique<P2pTransport>(rt, stream, comm.device(), busIds);
  direct->links_ = {&direct->connections_, direct->p2p_.get(), comm.config().p2pSlotBytes, 1u << 30};
  std::vector<uint8_t> reaches(comm.size(), 1);
  const RankInfo& self = peers[comm.rank()];
  for (int p = 0; p < comm.size(); ++p)
    if (!direct->p2p_->canConnect(self, peers[p])) {
      reaches[comm.rank()] = 0;
      TUTTI_INFO(kSubsysInit, "rank %d: device %s cannot reach %s's device %s by P2P: device buffers are staged",
                 comm.rank(), busIds[comm.rank()].c_str(), comm.describePeer(p).c_str(), busIds[p].c_str());
    }
  // One byte per rank, gathered: everyone learns whether anyone cannot.
  std::vector<uint8_t> all(comm.size());
  all[comm.rank()] = reaches[comm.rank()];
  TUTTI_RETURN_IF_ERROR(comm.bootstrap().allgather(all.data(), 1));
  for (uint8_t ok : all)
    if (!ok) return std::unique_ptr<DeviceDirect>();
  TUTTI_INFO(kSubsysInit, "rank %d: device buffers go GPU to GPU (p2p, %zu KiB chunks)", comm.rank(),
             comm.config().p2pSlotBytes >> 10);
  return direct;
}

DeviceDirect::DeviceDirect(Communicator& comm, DeviceRuntime& runtime, DeviceStream stream)
    : comm_(comm), runtime_(runtime), stream_(stream), reducer_(runtime, stream) {
  connections_.reset(comm.size());
}

// Events and rings go only once the stream has passed every use of them.
DeviceDirect::~DeviceDirect() {
  (void)runtime_.synchronize(stream_);
  connections_.reset(0);
  if (scratch_) runtime_.freeDevice(scratch_);
  for (void* p : retired_) runtime_.freeDevice(p);
  runtime_.destroyStream(stream_);
}

Status DeviceDirect::connectRings() {
  Plan rings = comm_.ringEdges();
  return connectPlans({{&comm_, &rings, &links_}});
}

size_t DeviceDirect::planCalls(const std::vector<CollectiveArgs>& calls, Plan* plans) {
  size_t scratch = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    comm_.planCall(calls[i], &plans[i]);
    scratch = std::max(scratch, comm_.scratchBytes(calls[i], plans[i]));
  }
  return scratch;
}

bool DeviceDirect::reserved(const std::vector<CollectiveArgs>& calls) {
  if (checked_.size() < calls.size()) checked_.resize(calls.size());
  if (planCalls(calls, checked_.data()) > scratchBytes_) return false;
  Connector missing;  // only asked what it would make
  for (size_t i = 0; i < calls.size(); ++i)
    if (comm_.requestConnections(checked_[i], &missing, &links_)) return false;
  return true;
}

Status DeviceDirect::reserve(const std::vector<Batch>& batches) {
  size_t total = 0;
  for (const Batch& b : batches) total += b.calls->size();
  std::vector<Plan> plans(total);  // sized once: the connector keeps their addresses
  std::vector<PlanToConnect> wanted;
  size_t next = 0;
  for (const Batch& b : batches) {
    const size_t scratch = b.direct->planCalls(*b.calls, plans.data() + next);
    for (size_t i = 0; i < b.calls->size(); ++i, ++next)
      wanted.push_back({&b.direct->comm_, &plans[next], &b.direct->links_});
    TUTTI_RETURN_IF_ERROR(b.direct->scratch(scratch).status());
  }
  return connectPlans(wanted);
}

// Outgrown scratch is kept, not freed: freeing waits for the whole device,
// where another communicator's gate may hold a stream.
Result<void*> DeviceDirect::scratch(size_t bytes) {
  if (scratchBytes_ >= bytes) return scratch_;
  DeviceScope scope(runtime_, comm_.device());
  TUTTI_RETURN_IF_ERROR(scope.status());
  TUTTI_ASSIGN_OR_RETURN(void* grown, runtime_.allocDevice(std::max(bytes, 2 * scratchBytes_)));
  if (scratch_) retired_.push_back(scratch_);
  scratch_ = grown;
  scratchBytes_ = std::max(bytes, 2 * scratchBytes_);
  return scratch_;
}

Status DeviceDirect::run(std::vector<CollectiveArgs>& calls) {
  plans_.resize(calls.size());
  works_.assign(calls.size(), Work{});
  // Connections and scratch were reserved at enqueue, on the caller's thread.
  for (size_t i = 0; i < calls.size(); ++i)
    TUTTI_RETURN_IF_ERROR(comm_.prepare(calls[i], &plans_[i], &works_[i]));  // links: this
  Status st = execute(works_.data(), works_.size(), reducer_, comm_.execOptions());
  Status launch = reducer_.takeError();
  // Every kernel reading or writing the caller's buffers ends before the
  // caller's stream may go on, and before the slots' last releases publish.
  Status done = runtime_.synchronize(stream_);
  connections_.forEach([](auto& c) { (void)c.progress(); });
  if (!st.ok()) return st;
  return launch.ok() ? done : launch;
}

std::string DeviceDirect::describePeer(int peer) const { return comm_.describePeer(peer); }

void DeviceDirect::notifyFailure(int failedRank) {
  comm_.setAsyncError(Code::kRemoteError);
  if (failedRank >= 0) connections_.forEach([failedRank](auto& c) { c.notifyFailure(failedRank); });
}

}  // namespace tutti
