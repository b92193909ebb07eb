#include "src/comm/device_direct.h"

#include "src/comm/communicator.h"
#include "src/comm/connector.h"
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
  runtime_.destroyStream(stream_);
}

Status DeviceDirect::connect(const std::vector<const Plan*>& plans) {
  LinkSet set{&connections_, p2p_.get(), comm_.config().p2pSlotBytes};
  Connector connector;
  bool any = false;
  for (const Plan* plan : plans) any |= comm_.requestConnections(*plan, &connector, &set);
  return any ? connector.run() : Status::Ok();
}

Status DeviceDirect::connectRings() {
  Plan rings = comm_.ringEdges();
  return connect({&rings});
}

Result<void*> DeviceDirect::scratch(size_t bytes) {
  if (scratchBytes_ >= bytes) return scratch_;
  if (scratch_) {
    TUTTI_RETURN_IF_ERROR(runtime_.synchronize(stream_));
    runtime_.freeDevice(scratch_);
    scratch_ = nullptr;
    scratchBytes_ = 0;
  }
  TUTTI_ASSIGN_OR_RETURN(scratch_, runtime_.allocDevice(bytes));
  scratchBytes_ = bytes;
  return scratch_;
}

Status DeviceDirect::run(std::vector<CollectiveArgs>& calls) {
  plans_.resize(calls.size());
  works_.assign(calls.size(), Work{});
  std::vector<const Plan*> plans;
  for (size_t i = 0; i < calls.size(); ++i) {
    TUTTI_RETURN_IF_ERROR(comm_.prepare(calls[i], &plans_[i], &works_[i]));
    works_[i].links = this;
    works_[i].chunkBytes = comm_.config().p2pSlotBytes;
    plans.push_back(&plans_[i]);
  }
  TUTTI_RETURN_IF_ERROR(connect(plans));
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
