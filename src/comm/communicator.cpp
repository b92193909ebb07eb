#include "src/comm/communicator.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tutti/tutti.h"
#include "src/comm/device_direct.h"
#include "src/comm/device_staging.h"
#include "src/common/config.h"
#include "src/common/interfaces.h"
#include "src/common/log.h"
#include "src/plan/planner.h"
#include "src/topo/nic_affinity.h"
#include "src/topo/topology.h"
#include "transport/registry.h"

namespace tutti {

Result<std::unique_ptr<Communicator>> Communicator::create(const BootstrapHandle& handle,
                                                           int nranks, int rank,
                                                           const CommOptions& options) {
  std::unique_ptr<Communicator> c(new Communicator());
  Status st = c->init(handle, nranks, rank, options);
  if (!st.ok()) return st;
  return c;
}

// The GPU path first: its connections name this communicator's peers.
Communicator::~Communicator() { direct_.reset(); }

Result<DeviceStaging*> Communicator::staging() {
  if (device_ < 0) return InvalidUsage("this communicator is host-only: no CUDA device at init");
  if (!staging_) staging_ = std::make_unique<DeviceStaging>(deviceRuntime(), config_.stagingBytes);
  return staging_.get();
}

Status Communicator::init(const BootstrapHandle& handle, int nranks, int rank,
                          const CommOptions& options) {
  rank_ = rank;
  nranks_ = nranks;
  name_ = options.name;
  device_ = options.device;
  magic_ = handle.magic;
  setLogRank(rank);
  TUTTI_ASSIGN_OR_RETURN(config_, CommConfig::fromEnv());
  if (options.timeoutSeconds > 0) config_.timeoutSeconds = options.timeoutSeconds;
  TUTTI_ASSIGN_OR_RETURN(auto ifaces, chooseInterfacesFromEnv());
  TUTTI_ASSIGN_OR_RETURN(TopoGraph topo, loadTopology());
  if (device_ >= 0) preferNicsNearDevice(topo, &ifaces);
  const NetInterface& iface = ifaces.front();
  TUTTI_INFO(kSubsysInit, "tutti %d.%d.%d: rank %d of %d, interface %s (%s), %s", TUTTI_MAJOR,
             TUTTI_MINOR, TUTTI_PATCH, rank, nranks, iface.name.c_str(),
             iface.address.toString().c_str(), describeDevice(device_).c_str());
  TUTTI_ASSIGN_OR_RETURN(bootstrap_, SocketBootstrap::create(handle, rank, nranks, iface,
                                                             config_.timeoutSeconds, &abort_));
  TUTTI_RETURN_IF_ERROR(checkSameConfig());
  TransportOptions topts;
  topts.shmDisabled = config_.shmDisabled;
  topts.socketInterfaces = ifaces;
  topts.socket = config_.socketStreams;
  topts.net = config_.net;
  topts.chunkBytes = config_.slotBytes;
  topts.swap = [this](const std::string& mine) { return swapAddresses(mine); };
  nics_ = static_cast<int>(ifaces.size());
  TUTTI_ASSIGN_OR_RETURN(transports_, createTransports(topts));
  TUTTI_INFO(kSubsysInit, "rank %d: network transport %s (%s)", rank, netName(config_.net),
             tunableString("NET").empty() ? "the fastest usable here" : "TUTTI_NET");
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
  cpu_set_t cpus;
  int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  TUTTI_RETURN_IF_ERROR(gatherLayout(topo, ifaces, cores));
  int localRanks = static_cast<int>(layout_.ranksOf(layout_.nodeOf(rank)).size());
  config_.adaptToOversubscription(localRanks, cores);
  TUTTI_INFO(kSubsysInit, "rank %d: %d rank(s) on this host, %d core(s): spin %d polls before yielding",
             rank, localRanks, cores, config_.spinCount);
  connections_.reset(nranks);
  TUTTI_RETURN_IF_ERROR(connectRings());
  TUTTI_RETURN_IF_ERROR(setUpDeviceDirect());
  // Every shared segment is mapped by both sides once all ranks get here.
  TUTTI_RETURN_IF_ERROR(bootstrap_->barrier());
  TUTTI_INFO(kSubsysInit, "rank %d: init done, up to %d channel(s), %zu KiB chunks x %d slots", rank,
             config_.maxChannels, config_.slotBytes >> 10, config_.nslots);
  return Status::Ok();
}

// The device's nearest NICs first: channel c listens on interface c % nics,
// so channel 0 and its peers' traffic take the NIC under the GPU's switch.
void Communicator::preferNicsNearDevice(const TopoGraph& topo, std::vector<NetInterface>* ifaces) const {
  auto bus = deviceRuntime().pciBusId(device_);
  if (!bus.ok()) return;
  std::vector<std::string> order = nicsNearestFirst(topo, *bus);
  auto place = [&](const NetInterface& i) {
    auto it = std::find(order.begin(), order.end(), i.name);
    return it - order.begin();  // interfaces the topology lacks go last
  };
  std::stable_sort(ifaces->begin(), ifaces->end(),
                   [&](const NetInterface& x, const NetInterface& y) { return place(x) < place(y); });
  TUTTI_INFO(kSubsysInit, "rank %d: device %d (%s) is nearest NIC %s", rank_, device_, bus->c_str(),
             order.empty() ? "(not in the topology)" : order.front().c_str());
}

// Each rank's device, gathered; then whether device calls go GPU to GPU.
Status Communicator::setUpDeviceDirect() {
  struct DeviceName {
    char busId[32];
  };
  std::vector<DeviceName> all(nranks_);
  if (device_ >= 0) {
    auto bus = deviceRuntime().pciBusId(device_);
    if (bus.ok()) snprintf(all[rank_].busId, sizeof(all[rank_].busId), "%s", bus->c_str());
  }
  TUTTI_RETURN_IF_ERROR(bootstrap_->allgather(all.data(), sizeof(DeviceName)));
  std::vector<std::string> busIds;
  for (const DeviceName& d : all) busIds.emplace_back(d.busId);
  TUTTI_ASSIGN_OR_RETURN(direct_, DeviceDirect::create(*this, busIds));
  if (direct_) TUTTI_RETURN_IF_ERROR(direct_->connectRings());
  return Status::Ok();
}

// Every rank's view of its machine, gathered: the node layout, the rings of
// each channel and the cost model's inputs follow from it, identically on
// every rank.
Status Communicator::gatherLayout(const TopoGraph& topo, const std::vector<NetInterface>& ifaces,
                                  int cores) {
  RankTopo mine;
  mine.hostHash = bootstrap_->peers()[rank_].hostHash;
  mine.cores = cores;
  // With a topology file the NICs are the file's (planning a machine that is
  // not this one); else the interfaces TUTTI_SOCKET_IFNAME chose.
  bool fromFile = !tunableString("TOPO_FILE").empty();
  float gbps = 0;
  int nics = 0;
  for (const TopoNode* nic : topo.ofKind(TopoKind::kNic)) {
    bool chosen = fromFile;
    for (const auto& i : ifaces) chosen |= i.name == nic->name;
    if (!chosen) continue;
    ++nics;
    gbps += nic->speedGbps > 0 ? static_cast<float>(nic->speedGbps) : 10.0f;
  }
  mine.nics = nics > 0 ? nics : static_cast<int>(ifaces.size());
  mine.netGbps = gbps > 0 ? gbps : 10.0f * mine.nics;
  std::vector<RankTopo> all(nranks_);
  all[rank_] = mine;
  TUTTI_RETURN_IF_ERROR(bootstrap_->allgather(all.data(), sizeof(RankTopo)));
  layout_ = NodeLayout(all);
  // One channel per NIC at least, so every NIC carries traffic.
  if (!config_.channelsForced)
    config_.maxChannels = std::min(kMaxChannels, std::max(config_.maxChannels, layout_.minNics()));
  rings_.clear();
  for (int c = 0; c < config_.maxChannels; ++c) rings_.push_back(layout_.ring(c, config_.ringOrder));
  tuning_ = TuneContext::fromLayout(layout_, rings_[0], config_.maxChannels, config_.channelsForced,
                                    config_.slotBytes);
  tuning_.filter = config_.algoFilter;
  for (int which = 0; which < 2; ++which) allReduceTrees_[which] = rankTreeLinks(layout_, which, -1, rank_);
  TUTTI_INFO(kSubsysInit, "rank %d: %s; ring of channel 0 crosses nodes %d time(s); %d NIC(s), %.0f Gbit/s",
             rank_, layout_.describe().c_str(), tuning_.ringCrossings, mine.nics, mine.netGbps);
  return Status::Ok();
}

Status Communicator::checkSameConfig() {
  std::vector<CommConfig::Shared> all(nranks_);
  all[rank_] = config_.shared();
  TUTTI_RETURN_IF_ERROR(bootstrap_->allgather(all.data(), sizeof(CommConfig::Shared)));
  for (int p = 0; p < nranks_; ++p) {
    if (all[p].net != all[0].net)
      return InvalidUsage(describePeer(p) + " uses the " + netName(static_cast<NetKind>(all[p].net)) +
                          " network transport and rank 0 " + netName(static_cast<NetKind>(all[0].net)) +
                          " (set TUTTI_NET alike on every rank, or give every host the same fabric)");
    if (std::memcmp(&all[p], &all[0], sizeof(CommConfig::Shared)) != 0)
      return InvalidUsage(describePeer(p) +
                          " runs with different TUTTI_BUFFSIZE, TUTTI_NSTEPS, TUTTI_NCHANNELS, "
                          "TUTTI_ALGO, TUTTI_RING_ORDER, TUTTI_SHM_DISABLE, TUTTI_STAGING_BYTES, TUTTI_P2P_DISABLE, TUTTI_P2P_BUFFSIZE or socket streams than rank 0; "
                          "they must match on every rank");
  }
  return Status::Ok();
}

// Variable-length blobs over the fixed-size allgather: sizes first.
Result<std::vector<std::string>> Communicator::swapAddresses(const std::string& mine) {
  std::vector<uint64_t> sizes(nranks_);
  sizes[rank_] = mine.size();
  TUTTI_RETURN_IF_ERROR(bootstrap_->allgather(sizes.data(), sizeof(uint64_t)));
  // Worker addresses are a few KiB: a larger size is a stray or hostile peer.
  constexpr uint64_t kMaxAddressBytes = 1 << 20;
  for (int p = 0; p < nranks_; ++p)
    if (sizes[p] > kMaxAddressBytes)
      return RemoteError(describePeer(p) + " announced a transport address of " +
                         std::to_string(sizes[p]) + " bytes (at most " +
                         std::to_string(kMaxAddressBytes) + ")");
  size_t width = *std::max_element(sizes.begin(), sizes.end());
  std::vector<char> all(width * nranks_);
  std::memcpy(all.data() + width * rank_, mine.data(), mine.size());
  if (width > 0) TUTTI_RETURN_IF_ERROR(bootstrap_->allgather(all.data(), width));
  std::vector<std::string> out(nranks_);
  for (int p = 0; p < nranks_; ++p) out[p].assign(all.data() + width * p, sizes[p]);
  return out;
}

Transport* Communicator::transportFor(int peer) const { return peerTransport_[peer]; }

ConnectionSpec Communicator::specFor(int channel, int peer) const {
  const auto& peers = bootstrap_->peers();
  ConnectionSpec spec{&peers[rank_], &peers[peer], magic_, 0, config_.slotBytes, config_.nslots,
                      config_.timeoutSeconds, &abort_};
  // Channels listen on the node's NICs in turn.
  spec.nic = channel < 0 ? 0 : channel % nics_;
  return spec;
}

Status Communicator::connectRings() {
  if (nranks_ == 1) return Status::Ok();
  Connector connector;
  requestConnections(ringEdges(), &connector);
  return connector.run();
}

Plan Communicator::ringEdges() const {
  Plan ringEdges;
  if (nranks_ == 1) return ringEdges;
  for (int c = 0; c < config_.maxChannels; ++c) {
    const std::vector<int>& ring = rings_[c];
    size_t pos = 0;
    while (ring[pos] != rank_) ++pos;
    ChannelProgram p;
    p.channel = c;
    addStep(&p.steps, StepKind::kRecvCopySend, ring[(pos + nranks_ - 1) % nranks_],
            ring[(pos + 1) % nranks_], 0, 0, 0);
    ringEdges.channels.push_back(p);
  }
  return ringEdges;
}

bool Communicator::requestConnections(const Plan& plan, Connector* connector, const LinkSet* set) {
  ConnectionTable& table = set ? *set->table : connections_;
  auto transport = [&](int peer) { return set ? set->transport : transportFor(peer); };
  auto spec = [&](int channel, int peer, int sender) {
    ConnectionSpec sp = specFor(channel, peer);
    sp.connectionId = ConnectionTable::connectionId(channel, sender);
    if (set) {
      sp.connectionId |= set->idBits;
      sp.slotBytes = set->slotBytes;
    }
    return sp;
  };
  bool any = false;
  for (const ChannelProgram& p : plan.channels)
    for (const Step& s : p.steps) {
      if (s.sendPeer >= 0 && !table.send(p.channel, s.sendPeer)) {
        connector->addSend({transport(s.sendPeer), bootstrap_.get(), spec(p.channel, s.sendPeer, rank_)},
                           table.sendSlot(p.channel, s.sendPeer));
        any = true;
      }
      if (s.recvPeer >= 0 && !table.recv(p.channel, s.recvPeer)) {
        connector->addRecv({transport(s.recvPeer), bootstrap_.get(), spec(p.channel, s.recvPeer, s.recvPeer)},
                           table.recvSlot(p.channel, s.recvPeer));
        any = true;
      }
    }
  return any;
}

namespace {
// The bytes a call moves in all: gathered and scattered buffers hold every rank's.
size_t callBytes(const CollectiveArgs& a, int nranks) {
  const bool allRows = a.collective == Collective::kAllGather || a.collective == Collective::kReduceScatter;
  return a.count * dtypeSize(a.dtype) * (allRows ? nranks : 1);
}
}  // namespace

TuneChoice Communicator::planCall(const CollectiveArgs& a, Plan* plan) {
  PlanRequest r;
  r.collective = a.collective;
  r.nranks = nranks_;
  r.rank = rank_;
  r.root = a.root;
  r.peer = a.root;
  r.count = a.count;
  r.elemSize = dtypeSize(a.dtype);
  r.rings = &rings_;
  r.layout = &layout_;
  r.allReduceTrees = allReduceTrees_;
  const size_t bytes = callBytes(a, nranks_);
  TuneChoice choice{Algorithm::kRing, 1, config_.slotBytes, 0};
  const bool p2p = a.collective == Collective::kSend || a.collective == Collective::kRecv;
  if (!p2p && nranks_ > 1) {
    const uint64_t key = (static_cast<uint64_t>(a.collective) << 56) ^ bytes;
    auto hit = tuneCache_.find(key);
    if (hit != tuneCache_.end()) {
      choice = hit->second;
    } else {
      choice = tune(tuning_, a.collective, bytes);
      if (tuneCache_.size() >= 4096) tuneCache_.clear();  // bounded for jobs of many sizes
      tuneCache_.emplace(key, choice);
    }
  }
  r.algorithm = choice.algorithm;
  r.nchannels = choice.nchannels;
  buildPlan(r, plan);
  return choice;
}

size_t Communicator::scratchBytes(const CollectiveArgs& a, const Plan& plan) const {
  // A tree reduce accumulates children in the output, which only the root has.
  if (plan.algorithm != Algorithm::kTree || a.collective != Collective::kReduce || rank_ == a.root) return 0;
  return a.count * dtypeSize(a.dtype);
}

Status Communicator::prepare(const CollectiveArgs& a, Plan* plan, Work* work) {
  const TuneChoice choice = planCall(a, plan);
  const bool p2p = a.collective == Collective::kSend || a.collective == Collective::kRecv;
  const size_t bytes = callBytes(a, nranks_);
  work->plan = plan;
  work->input = a.input;
  work->output = a.output;
  if (const size_t scratch = scratchBytes(a, *plan)) {
    if (a.onDevice && direct_) {  // where the device's kernels can reach
      TUTTI_ASSIGN_OR_RETURN(work->output, direct_->scratch(scratch));
    } else {
      if (scratch_.size() < scratch) {
        TUTTI_ASSIGN_OR_RETURN(scratch_, HostBuffer::allocate(scratch));
      }
      work->output = scratch_.data();
    }
  }
  work->dtype = a.dtype;
  work->op = a.op;
  work->nranks = nranks_;
  work->rank = rank_;
  work->sequence = ++sequence_;
  // Device buffers GPU to GPU travel over the P2P connections, in their chunks.
  const bool gpuToGpu = a.onDevice && direct_;
  work->links = gpuToGpu ? static_cast<Links*>(direct_.get()) : this;
  work->abort = &abort_;
  work->chunkBytes = gpuToGpu ? config_.p2pSlotBytes : choice.chunkBytes;
  if (!p2p)
    TUTTI_INFO(kSubsysTuning, "%s #%llu %zu bytes%s: %s, %d channel(s), %zu KiB chunks (predicted %.1f us)",
               collectiveName(a.collective), static_cast<unsigned long long>(sequence_), bytes,
               gpuToGpu ? " GPU to GPU" : "", algorithmName(choice.algorithm), choice.nchannels,
               work->chunkBytes >> 10, choice.predictedUs);
  TUTTI_TRACE(kSubsysColl, "%s #%llu count %zu %s %s root %d", collectiveName(a.collective),
              static_cast<unsigned long long>(sequence_), a.count, dtypeName(a.dtype),
              redOpName(a.op), a.root);
  return Status::Ok();
}

SendConnection* Communicator::sendTo(int channel, int peer) { return connections_.send(channel, peer); }

RecvConnection* Communicator::recvFrom(int channel, int peer) { return connections_.recv(channel, peer); }

std::string Communicator::describePeer(int peer) const {
  return bootstrap_ ? bootstrap_->describePeer(peer) : "rank " + std::to_string(peer);
}

void Communicator::notifyFailure(int failedRank) {
  setAsyncError(Code::kRemoteError);
  // Peers learn of a failure only when it has a rank to name; a broken
  // connection reaches them on their own connections anyway.
  if (failedRank >= 0) connections_.forEach([failedRank](auto& c) { c.notifyFailure(failedRank); });
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
