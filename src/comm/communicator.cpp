#include "src/comm/communicator.h"

#include <sched.h>

#include <cstring>

#include "tutti/tutti.h"
#include "src/common/interfaces.h"
#include "src/common/log.h"
#include "src/plan/ring_planner.h"
#include "transport/registry.h"

namespace tutti {

namespace {
// Connection ids, unique per receiver: ring channel c uses c, send/recv from
// peer q uses kP2PIdBase + q.
constexpr uint32_t kP2PIdBase = 1u << 20;
}  // namespace

Result<std::unique_ptr<Communicator>> Communicator::create(const BootstrapHandle& handle,
                                                           int nranks, int rank) {
  std::unique_ptr<Communicator> c(new Communicator());
  Status st = c->init(handle, nranks, rank);
  if (!st.ok()) return st;
  return c;
}

Communicator::~Communicator() = default;

Status Communicator::init(const BootstrapHandle& handle, int nranks, int rank) {
  rank_ = rank;
  nranks_ = nranks;
  magic_ = handle.magic;
  setLogRank(rank);
  TUTTI_ASSIGN_OR_RETURN(config_, CommConfig::fromEnv());
  TUTTI_ASSIGN_OR_RETURN(auto ifaces, chooseInterfacesFromEnv());
  const NetInterface& iface = ifaces.front();
  TUTTI_INFO(kSubsysInit, "tutti %d.%d.%d: rank %d of %d, interface %s (%s)", TUTTI_MAJOR,
             TUTTI_MINOR, TUTTI_PATCH, rank, nranks, iface.name.c_str(),
             iface.address.toString().c_str());
  TUTTI_ASSIGN_OR_RETURN(bootstrap_, SocketBootstrap::create(handle, rank, nranks, iface,
                                                             config_.timeoutSeconds, &abort_));
  TUTTI_RETURN_IF_ERROR(checkSameConfig());
  TransportOptions topts;
  topts.shmDisabled = config_.shmDisabled;
  topts.socketInterface = iface;
  TUTTI_ASSIGN_OR_RETURN(transports_, createTransports(topts));
  const auto& peers = bootstrap_->peers();
  peerTransport_.resize(nranks);
  for (int p = 0; p < nranks; ++p) {
    for (auto& t : transports_)
      if (t->canConnect(peers[rank], peers[p])) {
        peerTransport_[p] = t.get();
        break;
      }
    if (p != rank)
      TUTTI_INFO(kSubsysInit, "rank %d -> %s: %s", rank, describePeer(p).c_str(),
                 peerTransport_[p]->name());
  }
  int localRanks = 0;
  for (const RankInfo& p : peers) localRanks += p.hostHash == peers[rank].hostHash;
  cpu_set_t cpus;
  int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  config_.adaptToOversubscription(localRanks, cores);
  TUTTI_INFO(kSubsysInit, "rank %d: %d rank(s) on this host, %d core(s): spin %d polls before yielding",
             rank, localRanks, cores, config_.spinCount);
  p2pSend_.resize(nranks);
  p2pRecv_.resize(nranks);
  TUTTI_RETURN_IF_ERROR(connectRings());
  // Every shared segment is mapped by both sides once all ranks get here.
  TUTTI_RETURN_IF_ERROR(bootstrap_->barrier());
  TUTTI_INFO(kSubsysInit, "rank %d: init done, %d channel(s), %zu KiB chunks x %d slots", rank,
             config_.maxChannels, config_.slotBytes >> 10, config_.nslots);
  return Status::Ok();
}

Status Communicator::checkSameConfig() {
  std::vector<CommConfig::Shared> all(nranks_);
  all[rank_] = config_.shared();
  TUTTI_RETURN_IF_ERROR(bootstrap_->allgather(all.data(), sizeof(CommConfig::Shared)));
  for (int p = 0; p < nranks_; ++p)
    if (std::memcmp(&all[p], &all[0], sizeof(CommConfig::Shared)) != 0)
      return InvalidUsage(describePeer(p) +
                          " runs with different TUTTI_BUFFSIZE, TUTTI_NSTEPS, TUTTI_NCHANNELS or "
                          "TUTTI_SHM_DISABLE than rank 0; they must match on every rank");
  return Status::Ok();
}

Transport* Communicator::transportFor(int peer) const { return peerTransport_[peer]; }

Status Communicator::connectRings() {
  if (nranks_ == 1) return Status::Ok();
  const auto& peers = bootstrap_->peers();
  int next = (rank_ + 1) % nranks_, prev = (rank_ - 1 + nranks_) % nranks_;
  ringSend_.resize(config_.maxChannels);
  ringRecv_.resize(config_.maxChannels);
  Connector connector;
  for (int c = 0; c < config_.maxChannels; ++c) {
    ConnectionSpec spec{&peers[rank_], &peers[prev], magic_, static_cast<uint32_t>(c),
                        config_.slotBytes, config_.nslots, config_.timeoutSeconds, &abort_};
    connector.addRecv({transportFor(prev), bootstrap_.get(), spec}, &ringRecv_[c]);
    spec.peer = &peers[next];
    connector.addSend({transportFor(next), bootstrap_.get(), spec}, &ringSend_[c]);
  }
  return connector.run();
}

void Communicator::requestP2P(Collective kind, int peer, Connector* connector) {
  const auto& peers = bootstrap_->peers();
  ConnectionSpec spec{&peers[rank_], &peers[peer], magic_, 0, config_.slotBytes, config_.nslots,
                      config_.timeoutSeconds, &abort_};
  if (kind == Collective::kSend && !p2pSend_[peer]) {
    spec.connectionId = kP2PIdBase + rank_;  // the receiver's id for us
    connector->addSend({transportFor(peer), bootstrap_.get(), spec}, &p2pSend_[peer]);
  } else if (kind == Collective::kRecv && !p2pRecv_[peer]) {
    spec.connectionId = kP2PIdBase + peer;
    connector->addRecv({transportFor(peer), bootstrap_.get(), spec}, &p2pRecv_[peer]);
  }
}

int Communicator::channelsFor(size_t bytes) const {
  if (config_.channelsForced) return config_.maxChannels;
  // A channel pays off once every rank's block holds several chunks.
  size_t perChannel = static_cast<size_t>(nranks_) * config_.slotBytes * 4;
  size_t want = bytes / perChannel;
  if (want < 1) want = 1;
  return static_cast<int>(want < static_cast<size_t>(config_.maxChannels) ? want : config_.maxChannels);
}

void Communicator::prepare(const CollectiveArgs& a, Plan* plan, Work* work) {
  RingRequest r;
  r.collective = a.collective;
  r.nranks = nranks_;
  r.rank = rank_;
  r.root = a.root;
  r.peer = a.root;
  r.count = a.count;
  r.elemSize = dtypeSize(a.dtype);
  size_t totalBytes = a.count * r.elemSize;
  if (a.collective == Collective::kAllGather || a.collective == Collective::kReduceScatter)
    totalBytes *= nranks_;
  r.nchannels = nranks_ == 1 ? 1 : channelsFor(totalBytes);
  buildRingPlan(r, plan);
  work->plan = plan;
  work->input = a.input;
  work->output = a.output;
  work->dtype = a.dtype;
  work->op = a.op;
  work->nranks = nranks_;
  work->rank = rank_;
  work->sequence = ++sequence_;
  work->links = this;
  work->abort = &abort_;
  work->chunkBytes = config_.slotBytes;
  TUTTI_TRACE(kSubsysColl, "%s #%llu count %zu %s %s root %d channels %d",
              collectiveName(a.collective), static_cast<unsigned long long>(sequence_), a.count,
              dtypeName(a.dtype), redOpName(a.op), a.root, r.nchannels);
}

SendConnection* Communicator::sendTo(int channel, int peer) {
  if (channel == kP2PChannel) return peer >= 0 && peer < nranks_ ? p2pSend_[peer].get() : nullptr;
  return channel < static_cast<int>(ringSend_.size()) ? ringSend_[channel].get() : nullptr;
}

RecvConnection* Communicator::recvFrom(int channel, int peer) {
  if (channel == kP2PChannel) return peer >= 0 && peer < nranks_ ? p2pRecv_[peer].get() : nullptr;
  return channel < static_cast<int>(ringRecv_.size()) ? ringRecv_[channel].get() : nullptr;
}

std::string Communicator::describePeer(int peer) const {
  return bootstrap_ ? bootstrap_->describePeer(peer) : "rank " + std::to_string(peer);
}

void Communicator::notifyFailure(int failedRank) {
  setAsyncError(Code::kRemoteError);
  for (auto& s : ringSend_) if (s) s->notifyFailure(failedRank);
  for (auto& r : ringRecv_) if (r) r->notifyFailure(failedRank);
  for (auto& s : p2pSend_) if (s) s->notifyFailure(failedRank);
  for (auto& r : p2pRecv_) if (r) r->notifyFailure(failedRank);
}

void Communicator::setLastError(const std::string& message) {
  std::lock_guard<std::mutex> lock(errorMutex_);
  lastError_ = message;
}

std::string Communicator::lastError() const {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return lastError_;
}

void Communicator::setAsyncError(Code code) {
  Code expected = Code::kOk;
  asyncError_.compare_exchange_strong(expected, code);
}

}  // namespace tutti
