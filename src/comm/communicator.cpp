#include "src/common/clock.h"
#include "src/comm/communicator.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tutti/tutti.h"
#include "src/comm/cores/node_cores.h"
#include "src/comm/group.h"
#include "src/comm/diagnosis/hang_report.h"
#include "src/comm/tuning/link_probe.h"
#include "src/comm/diagnosis/progress_service.h"
#include "src/common/config.h"
#include "src/common/hash.h"
#include "src/common/interfaces.h"
#include "src/common/log.h"
#include "src/plan/planner.h"
#include "src/topo/nic_affinity.h"
#include "src/topo/topology.h"
#include "transport/registry.h"
#include "transport/shm/segment.h"

namespace tutti {

Result<std::unique_ptr<Communicator>> Communicator::create(const BootstrapHandle& handle,
                                                           int nranks, int rank,
                                                           const CommOptions& options) {
  std::unique_ptr<Communicator> c(new Communicator());
  Status st = c->init(handle, nranks, rank, options);
  if (!st.ok()) return st;
  return c;
}

// Device connections go once the stream is past every kernel that uses
// their slots; the stream goes last.
Communicator::~Communicator() {
  // Plans make connections as calls first need them: what the job came to.
  TUTTI_INFO(kSubsysInit, "rank %d: destroying the communicator, which %s", rank_, describeMemory().c_str());
  if (const std::vector<KeptCall> calls = callTimes_.calls(); !keptPath_.empty() && !calls.empty()) {
    const Status kept = writeKeptCalls(keptPath_, keptShape_, calls);
    const std::string where = kept.ok() ? "kept in " + keptPath_ : "not kept: " + kept.message();
    TUTTI_INFO(kSubsysInit | kSubsysTuning, "rank 0: the times of %zu size(s) of large all-reduces %s",
               calls.size(), where.c_str());
  }
  if (deviceCalls_) (void)deviceCalls_->finish();
  connections_.clear();
  deviceCalls_.reset();
  // A host-mate killed before its peers mapped its segments left their
  // names: the survivors remove them, so a kill at any moment leaves none.
  if (bootstrap_) {
    for (const RankInfo& r : peers())
      if (r.hostHash == peers()[rank_].hostHash && r.pid != getpid()) ShmSegment::removeNamesOfDeadProcess(r.pid);
  }
}

Status Communicator::init(const BootstrapHandle& handle, int nranks, int rank,
                          const CommOptions& options) {
  PhaseClock clock;
  rank_ = rank;
  nranks_ = nranks;
  name_ = options.name;
  device_ = options.device;
  setLogRank(rank);
  TUTTI_ASSIGN_OR_RETURN(config_, CommConfig::fromEnv());
  if (options.timeoutSeconds > 0) config_.timeoutSeconds = options.timeoutSeconds;
  if (options.deterministic >= 0) config_.deterministic = options.deterministic == 1;
  TUTTI_ASSIGN_OR_RETURN(auto ifaces, chooseInterfacesFromEnv());
  clock.lap("settings and interfaces");
  TUTTI_ASSIGN_OR_RETURN(TopoGraph topo, loadTopology());
  if (device_ >= 0) preferNicsNearDevice(topo, &ifaces);
  clock.lap("topology");
  const NetInterface& iface = ifaces.front();
  TUTTI_INFO(kSubsysInit, "tutti %d.%d.%d: rank %d of %d, interface %s (%s), %s", TUTTI_MAJOR,
             TUTTI_MINOR, TUTTI_PATCH, rank, nranks, iface.name.c_str(),
             iface.address.toString().c_str(), describeDevice(device_).c_str());
  TUTTI_ASSIGN_OR_RETURN(uint16_t progressPort, ProgressService::listenOn(iface.address));
  TUTTI_ASSIGN_OR_RETURN(bootstrap_, SocketBootstrap::create(handle, rank, nranks, iface,
                                                             config_.timeoutSeconds, &health_.abortFlag(),
                                                             progressPort));
  TUTTI_RETURN_IF_ERROR(health_.recorder().start({rank, nranks, handle.magic, localHostName(), name_}));
  if (Status st = health_.progress().publish(handle.magic, rank); !st.ok())
    TUTTI_WARN(kSubsysInit, "rank %d: progress stays private (%s): a timeout cannot name stopped ranks",
               rank, st.message().c_str());
  TUTTI_RETURN_IF_ERROR(checkSameConfig());
  clock.lap("bootstrap");
  std::vector<std::string> busIds;
  TUTTI_ASSIGN_OR_RETURN(busIds, gatherBusIds());
  std::vector<ProgressBoard::HostMate> hostMates;  // every rank has published its record by now
  for (int r = 0; r < nranks; ++r) {
    const bool hostMate = peers()[r].hostHash == peers()[rank].hostHash;
    if (hostMate) hostMates.push_back({peers()[r].pid, r});
    gpuSharers_ += hostMate && !busIds[rank].empty() && busIds[r] == busIds[rank];
  }
  health_.progress().watchHostMates(hostMates);
  TransportOptions topts;
  topts.p2pDisabled = config_.p2pDisabled;
  topts.device = device_;
  topts.busIds = busIds;
  topts.topology = &topo;
  topts.shmDisabled = config_.shmDisabled;
  topts.socketInterfaces = ifaces;
  topts.net = config_.net;
  topts.chunkBytes = std::max(config_.slotBytes, config_.deviceSlotBytes);
  topts.swap = [this](const std::string& mine) { return swapAddresses(mine); };
  TUTTI_ASSIGN_OR_RETURN(auto transports, createTransports(topts));
  TUTTI_INFO(kSubsysInit, "rank %d: network transport %s (%s)", rank, netName(config_.net),
             tunableString("NET").empty() ? "the fastest usable here" : "TUTTI_NET");
  const std::vector<int> myCores = threadCores();
  const int cores = std::max<int>(1, static_cast<int>(myCores.size()));
  TUTTI_RETURN_IF_ERROR(gatherLayout(topo, ifaces, cores));
  clock.lap("exchange");
  int localRanks = static_cast<int>(planner_.layout().ranksOf(planner_.layout().nodeOf(rank)).size());
  // Network nodes on one kernel and CPU set (containers, namespaces) share
  // the cores too: a rank spinning for the network keeps one that works off.
  int sharingCores = 0;
  for (const RankInfo& r : peers()) sharingCores += r.coresHash == peers()[rank].coresHash;
  config_.adaptToOversubscription(std::max(localRanks, sharingCores), cores, planner_.layout().nnodes(),
                                  options.callsBesideCompute);
  TUTTI_INFO(kSubsysInit,
             "rank %d: %d rank(s) on this host, %d on its cores, %d core(s): spin %d polls before yielding%s", rank,
             localRanks, sharingCores, cores, config_.spinCount,
             config_.yieldUsBeforeSleep == 0 ? ", then sleep (calls beside compute)"
             : config_.yieldUsBeforeSleep > 0 ? ", sleep after yielding a while" : "");
  // Network nodes sharing this kernel's cores take a share each (cores/node_cores.h).
  if (config_.nodeCores) {
    const NodeLayout& layout = planner_.layout();
    std::vector<int> nodes;
    for (int r = 0; r < nranks; ++r)
      if (peers()[r].coresHash == peers()[rank].coresHash) nodes.push_back(layout.nodeOf(r));
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    const std::vector<int> share = nodeCoreShare(myCores, nodes, layout.nodeOf(rank), sharingCores);
    if (!share.empty()) {
      const Status bound = bindThreadTo(share);
      const std::string note = bound.ok() ? "" : " (not bound: " + bound.message() + ")";
      TUTTI_INFO(kSubsysInit, "rank %d: %zu network nodes share %d core(s): node %d takes core(s) %s%s", rank,
                 nodes.size(), cores, layout.nodeOf(rank), describeCores(share).c_str(), note.c_str());
    }
  }
  // Waits on sockets and shared memory at once sleep in poll() beside it.
  if (config_.sharedMemoryYieldRounds >= 0 && planner_.layout().nnodes() > 1) {
    auto bell = Doorbell::bind(handle.magic, rank);
    if (bell.ok()) doorbell_ = std::move(bell.value());
    else TUTTI_INFO(kSubsysInit, "%s: such waits yield instead", bell.status().message().c_str());
  }
  // A process that has not used its device yet (no context) may never: it
  // gets its device side at its first device call, not a context of
  // tutti's making now (hundreds of MiB of the device's memory each).
  const bool deviceNow = device_ >= 0 && deviceRuntime().contextActive(device_);
  if (deviceNow) {
    TUTTI_ASSIGN_OR_RETURN(deviceCalls_, DeviceCalls::create(deviceRuntime(), device_, &health_.abortFlag(), config_.timeoutSeconds, gpuSharers_,
                                                       config_.leanWorker));
  } else if (device_ >= 0) {
    TUTTI_INFO(kSubsysInit, "rank %d: device %d has no context yet: tutti makes none until a call gets device buffers",
               rank, device_);
  }
  ConnectionSettings cs;
  cs.magic = handle.magic;
  cs.hostSlotBytes = config_.slotBytes;
  cs.deviceSlotBytes = config_.deviceSlotBytes;
  cs.nslots = config_.nslots;
  cs.timeoutSeconds = config_.timeoutSeconds;
  cs.abort = &health_.abortFlag();
  cs.nics = static_cast<int>(ifaces.size());
  cs.device = device_;
  cs.deviceQueue = deviceCalls_ ? &deviceCalls_->queue() : nullptr;
  TUTTI_RETURN_IF_ERROR(connections_.init(std::move(transports), cs, *bootstrap_));
  const bool hostBlock = planner_.tuning().hostBlock;
  if (hostBlock && rank_ == 0) TUTTI_RETURN_IF_ERROR(makeHostBlock(false));
  TUTTI_RETURN_IF_ERROR(connectInitEdges(deviceNow));
  if (hostBlock && rank_ != 0) TUTTI_RETURN_IF_ERROR(makeHostBlock(true));
  clock.lap("connections and buffers");
  TUTTI_RETURN_IF_ERROR(measureLinkCosts());
  clock.lap("link costs");
  // Every shared segment is mapped by both sides once all ranks get here.
  TUTTI_RETURN_IF_ERROR(bootstrap_->barrier());
  if (small_) small_->block().unlink();
  health_.progress().unlinkName();
  clock.lap("final barrier");
  TUTTI_INFO(kSubsysInit, "rank %d: init done in %.1f ms (%s), up to %d channel(s); %s", rank, clock.totalMs(),
             clock.laps().c_str(), config_.maxChannels, describeMemory().c_str());
  return Status::Ok();
}

std::string Communicator::describeMemory() const {
  const MemoryTally& t = memoryHeld();
  char text[256];
  snprintf(text, sizeof(text),
           "holds %.1f MiB of host memory and %.1f MiB of device memory in the slots of %d connection(s)%s "
           "(host calls: %d slots of %zu KiB each, TUTTI_NSTEPS of TUTTI_BUFFSIZE/TUTTI_NSTEPS)",
           static_cast<double>(t.hostBytes.load()) / (1 << 20), static_cast<double>(t.deviceBytes.load()) / (1 << 20),
           t.connections.load(), small_ ? " and the host block" : "", config_.nslots, config_.slotBytes >> 10);
  return text;
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

// Each rank's device by PCI bus id ("" for a host-only rank): the P2P
// transport tells from them which peers' devices this one reaches.
Result<std::vector<std::string>> Communicator::gatherBusIds() {
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
  for (DeviceName& d : all) {
    d.busId[sizeof(d.busId) - 1] = '\0';
    busIds.emplace_back(d.busId);
  }
  return busIds;
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
  NodeLayout layout(all);
  // One channel per NIC at least, so every NIC carries traffic.
  if (!config_.channelsForced)
    config_.maxChannels = std::min(kMaxChannels, std::max(config_.maxChannels, layout.minNics()));
  PlannerSettings ps;
  ps.maxChannels = config_.maxChannels;
  ps.channelsForced = config_.channelsForced;
  ps.ringOrder = config_.ringOrder;
  ps.maxChunkBytes = config_.slotBytes;
  ps.filter = config_.algoFilter;
  ps.deterministic = config_.deterministic;
  ps.sharedMemory = !config_.shmDisabled;
  planner_ = CallPlanner(std::move(layout), rank_, ps);
  TUTTI_INFO(kSubsysInit, "rank %d: %s; ring of channel 0 crosses nodes %d time(s); %d NIC(s), %.0f Gbit/s",
             rank_, planner_.layout().describe().c_str(), planner_.tuning().ringCrossings, mine.nics, mine.netGbps);
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
                          "TUTTI_ALGO, TUTTI_RING_ORDER, TUTTI_SHM_DISABLE, TUTTI_P2P_DISABLE, TUTTI_P2P_BUFFSIZE, "
                          "TUTTI_DETERMINISTIC, TUTTI_MEASURE_LINKS or TUTTI_KEEP_CALL_TIMES than rank 0; "
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

// Host rings always; the device rings too when the device side is made at
// init, so the common first calls find them (a first device call connects
// what it lacks before it takes its gates).
Status Communicator::connectInitEdges(bool device) {
  if (nranks_ == 1) return Status::Ok();
  Plan rings = planner_.initEdges();
  std::vector<PlanToConnect> wanted{{this, &rings, Memory::kHost}};
  if (device) wanted.push_back({this, &rings, Memory::kDevice});
  return connectPlans(wanted);
}

Status Communicator::measureLinkCosts() {
  if (planner_.layout().nnodes() < 2 || !config_.measureLinks) return Status::Ok();
  const std::string during = "rank " + std::to_string(rank_) + " measuring the links at init (TUTTI_MEASURE_LINKS)";
  auto links = measureLinks(*this);
  if (!links.ok()) return links.status().withContext(during);
  TuneContext tuning = planner_.tuning();
  applyMeasuredLinks(*links, &tuning);
  if (Status st = calibrateAllReduce(*this, &tuning); !st.ok()) return st.withContext(during);
  if (config_.keepCallTimes)
    if (Status st = addKeptCallTimes(&tuning); !st.ok()) return st.withContext(during);
  std::string calibrated;
  for (int a = 0; a < kNumAlgorithms; ++a) {
    const TuneContext::Calibration& k = tuning.allReduce[a];
    if (k.points == 0) continue;
    calibrated += std::string(calibrated.empty() ? "" : "; ") + algorithmName(static_cast<Algorithm>(a));
    for (int p = 0; p < k.points; ++p) {
      char point[80];
      snprintf(point, sizeof(point), " %.0f B %.1f us (%.2fx%s)", k.bytes[p], k.us[p], k.ratio[p],
               k.kept[p] ? ", with earlier runs' calls" : "");
      calibrated += point;
    }
    char draws[40];
    snprintf(draws, sizeof(draws), ", slow draws %.2fx", k.slowDraw);
    calibrated += draws;
  }
  TUTTI_INFO(kSubsysInit | kSubsysTuning,
             "rank %d: links measured with every rank busy: inside nodes %.1f us, %.2f GB/s a stream; "
             "between nodes %.1f us, %.2f GB/s a stream (%d stream(s) a node); all-reduce measured over predicted by %s; "
             "slow draws: a call costs %.2fx its typical time",
             rank_, tuning.intra.latencyUs, tuning.intra.channelGBs, tuning.net.latencyUs, tuning.net.channelGBs,
             links->net.streams, calibrated.c_str(), tuning.slowDrawFactor);
  return Status::Ok();
}

Status Communicator::addKeptCallTimes(TuneContext* tuning) {
  constexpr int kTagKeptCalls = -2;  // bootstrap tags below 0 are tutti's own
  struct Kept {
    int32_t count;
    KeptCall calls[kMaxKeptCalls];
  } kept{};
  if (rank_ == 0) {
    keptShape_ = keptCallsShape();
    keptPath_ = keptCallsPath(topologyCacheDir(), keptShape_);
    const std::vector<KeptCall> read = readKeptCalls(keptPath_, keptShape_);
    kept.count = static_cast<int32_t>(read.size());
    std::copy(read.begin(), read.end(), kept.calls);
  }
  TUTTI_RETURN_IF_ERROR(broadcastFromRank0(*bootstrap_, kTagKeptCalls, &kept, sizeof(kept)));
  if (kept.count < 0 || kept.count > kMaxKeptCalls)
    return InternalError("rank 0 sent " + std::to_string(kept.count) + " kept call times");
  addKeptCalls(std::vector<KeptCall>(kept.calls, kept.calls + kept.count), tuning);
  setTuning(*tuning);
  return Status::Ok();
}

std::string Communicator::keptCallsShape() const {
  cpu_set_t cpus;
  const int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  int sharing = 0;
  for (const RankInfo& r : peers()) sharing += r.coresHash == peers()[rank_].coresHash;
  const CommConfig::Shared shared = config_.shared();
  return tutti::keptCallsShape(planner_.layout().describe(), sharing, cores, netName(config_.net),
                               planner_.layout().minNetGbps(), fnv1a64(&shared, sizeof(shared)));
}

void Communicator::keepTime(const CollectiveArgs& a, double tookUs) {
  const size_t bytes = callBytes({a.collective, a.count, dtypeSize(a.dtype), a.root}, nranks_);
  if (worthKeeping(plannedAlgorithm_, bytes)) callTimes_.note(plannedAlgorithm_, bytes, tookUs);
}

Status Communicator::makeDeviceSide() {
  if (deviceCalls_ || device_ < 0) return Status::Ok();
  auto made = DeviceCalls::create(deviceRuntime(), device_, &health_.abortFlag(), config_.timeoutSeconds, gpuSharers_,
                                                       config_.leanWorker);
  if (!made.ok()) return made.status().withContext("rank " + std::to_string(rank_) + " making its device side");
  deviceCalls_ = std::move(made.value());
  connections_.setDeviceQueue(&deviceCalls_->queue());
  TUTTI_INFO(kSubsysInit, "rank %d: device side made at the first device call, on device %d", rank_, device_);
  return Status::Ok();
}

Status Communicator::makeHostBlock(bool open) {
  const std::string name = HostBlock::nameFor(peers()[0].pid, bootstrap_->magic());
  std::unique_ptr<HostBlock> block;
  if (open) {
    auto opened = HostBlock::open(name, nranks_, hostBlockShape(nranks_), config_.timeoutSeconds, &health_.abortFlag());
    if (!opened.ok()) return opened.status().withContext("rank " + std::to_string(rank_) + " mapping the host block of " + describePeer(0));
    block = std::move(opened.value());
  } else {
    TUTTI_ASSIGN_OR_RETURN(block, HostBlock::create(name, nranks_, hostBlockShape(nranks_)));
  }
  std::vector<int> pids;
  for (const RankInfo& r : peers()) pids.push_back(r.pid);
  connections_.table().tally().hostBytes.fetch_add(block->bytesPerRank());  // this rank's slots of it
  const SmallCalls::Context context{this, rank_, &health_.abortFlag(), &health_.progress().mine(), &health_.recorder()};
  small_ = std::make_unique<SmallCalls>(std::move(block), std::move(pids), execOptions(), context);
  return Status::Ok();
}

TuneChoice Communicator::planCall(const CollectiveArgs& a, Plan* plan) {
  return planner_.plan({a.collective, a.count, dtypeSize(a.dtype), a.root, a.onDevice}, plan);
}

// Every call's line at TRACE, wherever it runs.
static void traceCall(const CollectiveArgs& a, uint64_t sequence) {
  TUTTI_TRACE(kSubsysColl, "%s #%llu count %zu %s %s root %d", collectiveName(a.collective),
              static_cast<unsigned long long>(sequence), a.count, dtypeName(a.dtype), redOpName(a.op), a.root);
}

void Communicator::logTook(const CollectiveArgs& a, double tookUs) const {
  if (predictedUs_ <= 0) return;
  TUTTI_INFO(kSubsysTuning, "%s #%llu took %.1f us (predicted %.1f us, %+.0f%%)", collectiveName(a.collective),
             static_cast<unsigned long long>(sequence_), tookUs, predictedUs_, 100.0 * (predictedUs_ - tookUs) / tookUs);
}

void Communicator::logHostBlockCall(const CollectiveArgs& a) const {
  TUTTI_INFO(kSubsysTuning, "%s #%llu %zu bytes of host memory: oneshot on the host block", collectiveName(a.collective),
             static_cast<unsigned long long>(sequence_), callBytes({a.collective, a.count, dtypeSize(a.dtype), a.root}, nranks_));
  traceCall(a, sequence_);
}

Status Communicator::prepare(const CollectiveArgs& a, Plan* plan, Work* work) {
  const CallShape shape{a.collective, a.count, dtypeSize(a.dtype), a.root, a.onDevice};
  const TuneChoice choice = planner_.choose(shape);
  planner_.build(shape, choice, plan);
  const bool p2p = a.collective == Collective::kSend || a.collective == Collective::kRecv;
  const bool device = a.onDevice;
  if (device && !deviceCalls_) return InvalidUsage("this communicator is host-only: no CUDA device at init");
  work->plan = plan;
  work->input = a.input;
  work->output = a.output;
  work->finalOutput = nullptr;
  if (const size_t scratch = plan->scratchBytes) {  // what the algorithm declared
    if (plan->finalToOutput) work->finalOutput = a.output;
    if (device) {  // where the device's kernels can reach; reserved before the call
      TUTTI_ASSIGN_OR_RETURN(work->output, deviceCalls_->scratch(scratch));
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
  // Collectives are numbered: every rank calls each under the same number.
  // Sends and receives involve two ranks, so they keep the last number.
  work->sequence = a.internal ? 0 : p2p ? sequence_ : ++sequence_;
  work->peers = this;
  work->memory = a.memory();
  work->abort = &health_.abortFlag();
  work->progress = &health_.progress().mine();
  // One-shot calls are small, and mismatched ones could line up and
  // complete (a broadcast's receiver takes an all-reduce's chunk): each
  // chunk carries the call's signature, so a rank that gets another call's
  // refuses it. (A one-shot all-reduce in place also writes its sum over
  // what it sent, maybe before a socket flushed it: tagged sends are copies.)
  work->tag = plan->taggedChunks ? a.signature(work->sequence).tag() : 0;
  if (!a.internal) {
    const CallSignature call = a.signature(sequence_);
    work->progress->enter(call, !p2p);
    const RecordedChoice chosen{algorithmName(choice.algorithm), choice.nchannels, static_cast<float>(choice.predictedUs)};
    health_.recorder().begin(call, device, p2p ? RecordedChoice{} : chosen);
    if (!device && !p2p) lastCall_.store(shape, false, sequence_);
  }
  // Device chunks fill their connections' slots: one worker op per chunk and step.
  work->chunkBytes = device ? config_.deviceSlotBytes : choice.chunkBytes;
  if (work->tag) work->chunkBytes = oneShotSlotsOf(narrowestOneShotLink(&layout())).chunkDataBytes;
  if (!p2p)
    TUTTI_INFO(kSubsysTuning, "%s #%llu %zu bytes of %s memory: %s, %d channel(s), %zu KiB chunks (predicted %.1f us)",
               collectiveName(a.collective), static_cast<unsigned long long>(sequence_),
               callBytes({a.collective, a.count, dtypeSize(a.dtype), a.root}, nranks_), memoryName(a.memory()),
               algorithmName(choice.algorithm), choice.nchannels, work->chunkBytes >> 10, choice.predictedUs);
  // Host calls only: device calls are prepared on the background thread, and
  // their time is the stream's, not the call's.
  if (!device) {
    predictedUs_ = p2p ? 0 : choice.predictedUs;
    plannedAlgorithm_ = choice.algorithm;
  }
  traceCall(a, sequence_);
  return Status::Ok();
}

bool Communicator::readyForDevice(const std::vector<CollectiveArgs>& calls) {
  if (!deviceCalls_) return device_ < 0;  // host-only: prepare refuses them
  // The caller's thread, while the background may run earlier calls.
  static thread_local Plan checked;
  Connector missing;  // only asked what it would make
  for (const CollectiveArgs& call : calls) {
    planCall(call, &checked);
    if (checked.scratchBytes > deviceCalls_->scratchBytes()) return false;
    if (requestConnections(checked, Memory::kDevice, &missing)) return false;
  }
  return true;
}

Status Communicator::reserveForDevice(const std::vector<DeviceBatch>& batches) {
  size_t total = 0;
  for (const DeviceBatch& b : batches) total += b.calls->size();
  std::vector<Plan> plans(total);  // sized once: the connector keeps their addresses
  std::vector<PlanToConnect> wanted;
  size_t next = 0;
  for (const DeviceBatch& b : batches) {
    TUTTI_RETURN_IF_ERROR(b.comm->makeDeviceSide());
    if (!b.comm->deviceCalls_) continue;
    size_t scratch = 0;
    for (const CollectiveArgs& call : *b.calls) {
      b.comm->planCall(call, &plans[next]);
      scratch = std::max(scratch, plans[next].scratchBytes);
      wanted.push_back({b.comm, &plans[next++], Memory::kDevice});
    }
    TUTTI_RETURN_IF_ERROR(b.comm->deviceCalls_->scratch(scratch).status());
  }
  return connectPlans(wanted);
}

Status Communicator::runOnDevice(const std::vector<CollectiveArgs>& calls) {
  if (devicePlans_.size() < calls.size()) devicePlans_.resize(calls.size());
  deviceWorks_.assign(calls.size(), Work{});
  // Connections and scratch were reserved at enqueue, on the caller's thread.
  for (size_t i = 0; i < calls.size(); ++i) TUTTI_RETURN_IF_ERROR(prepare(calls[i], &devicePlans_[i], &deviceWorks_[i]));
  Status st = execute(deviceWorks_.data(), deviceWorks_.size(), deviceCalls_->reducer(), execOptions());
  // Every op reading or writing the caller's buffers ends before the
  // caller's stream may go on; then the slots' last releases go out.
  Status done = deviceCalls_->drain();
  connections_.table().forEach(Memory::kDevice, [](auto& c) { (void)c.progress(); });
  return st.ok() ? done : st;
}

HangReport Communicator::explainHang(const std::string& event, int noticed) {
  constexpr double kAskSeconds = 2;  // the answers must not cost another timeout
  if (!bootstrap_) return {};
  const std::vector<RankInfo>& ranks = bootstrap_->peers();
  std::vector<RankProgress> progress = askEveryRank(ranks, rank_, bootstrap_->magic(), kAskSeconds);
  std::vector<HangPeer> view(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) view[r] = {ranks[r].hostname, ranks[r].pid, progress[r]};
  const CallRecord mine = health_.progress().mine().read();
  view[rank_].progress.record = mine;  // its own record, even when it is not shared
  view[rank_].progress.hasRecord = 1;
  // A culprit whose host no longer answers (its ranks gave up and left):
  // its state as the rank that blamed it saw it.
  const Verdict v = ProgressService::verdict(bootstrap_->magic());
  if (v.culprit >= 0 && v.culprit < nranks_ && v.culpritState >= 0 && !view[v.culprit].progress.answered) {
    view[v.culprit].progress.answered = 1;
    view[v.culprit].progress.state = v.culpritState;
  }
  return tutti::explainHang(rank_, mine, event, view, noticed);
}

Status Communicator::explainSetupFailure(const Status& failed) {
  if (failed.ok()) return failed;
  char event[64];
  snprintf(event, sizeof(event), "could not connect on rank %d", rank_);
  const HangReport why = explainHang(event, reportedFailure(0));
  if (why.culprit < 0 || !why.certain) return failed;
  blame(why);
  return Status(why.mismatch ? Code::kInvalidUsage : failed.code(), why.text + "; here, " + failed.message());
}

void Communicator::callEnded(uint64_t sequence, Code result) {
  if (sequence == 0) return;  // tutti's own call
  if (result == Code::kOk) health_.progress().mine().finish(sequence);
  health_.recorder().end(sequence, result);
  if (result != Code::kOk) health_.recorder().writeOnFirstError();
}

std::set<int> Communicator::failedRanks() {
  std::set<int> failed = health_.blamed();
  const int culprit = verdictOfPeer(nullptr).culprit;
  if (culprit >= 0 && culprit < nranks_) failed.insert(culprit);
  // And every rank whose process is gone or stopped now, or whose host no
  // longer answers (a peer that died without a diagnosis: its connection
  // just broke).
  if (bootstrap_) {
    constexpr double kAskSeconds = 2;
    const std::vector<RankProgress> now = askEveryRank(bootstrap_->peers(), rank_, bootstrap_->magic(), kAskSeconds);
    for (int r = 0; r < nranks_ && r < static_cast<int>(now.size()); ++r)
      if (!now[r].answered || now[r].state == static_cast<int32_t>(ProcessState::kStopped) ||
          now[r].state == static_cast<int32_t>(ProcessState::kGone))
        failed.insert(r);
  }
  failed.erase(rank_);
  return failed;
}

void Communicator::blame(const HangReport& why) {
  constexpr double kTellSeconds = 2;
  if (why.culprit >= 0) health_.blame(why.culprit);
  // The verdict first: a rank that learns of the failure from a connection
  // finds the verdict there, and says why.
  if (bootstrap_)
    tellEveryRank(bootstrap_->peers(), bootstrap_->magic(),
                  {why.culprit, rank_, why.culpritState, why.mismatch ? 1 : 0, why.culpritCall, why.ownCall}, kTellSeconds);
  notifyFailure(why.culprit);
}

HangReport Communicator::verdictOfPeer(int* by) {
  HangReport r;
  if (!bootstrap_) return r;
  const Verdict v = ProgressService::verdict(bootstrap_->magic());
  if (by) *by = v.by;
  r.culprit = v.culprit;
  r.mismatch = v.mismatch == 1;
  if (r.mismatch)
    r.text = "rank " + std::to_string(v.culprit) + " called " + describeCall(v.culpritCall) + " as call #" +
             std::to_string(v.culpritCall.sequence) + " while rank " + std::to_string(v.by) + " called " +
             describeCall(v.byCall);
  return r;
}

std::string Communicator::describePeer(int peer) const {
  return bootstrap_ ? bootstrap_->describePeer(peer) : "rank " + std::to_string(peer);
}

void Communicator::notifyRevoked() {
  if (small_) small_->notifyFailure(rank_, /*revoked=*/true);
  notifyFailure(rank_);
}

void Communicator::notifyFailure(int failedRank) {
  setAsyncError(Code::kRemoteError);
  // Peers learn of a failure only when it has a rank to name; a broken
  // connection reaches them on their own connections anyway.
  if (failedRank < 0) return;
  connections_.table().forEach([failedRank](auto& c) { c.notifyFailure(failedRank); });
  if (small_) small_->notifyFailure(failedRank);
}

}  // namespace tutti
