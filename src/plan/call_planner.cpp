#include "src/plan/call_planner.h"

#include "src/plan/algorithms.h"
#include "src/plan/planner.h"

#include <atomic>

namespace tutti {

size_t callBytes(const CallShape& c, int nranks) {
  const bool allRows = c.collective == Collective::kAllGather || c.collective == Collective::kReduceScatter;
  return c.count * c.elemSize * (allRows ? nranks : 1);
}

uint64_t CallPlanner::nextId() {
  static std::atomic<uint64_t> ids{0};
  return ++ids;
}

CallPlanner::CallPlanner(NodeLayout layout, int rank, const PlannerSettings& s)
    : id_(nextId()), rank_(rank), layout_(std::move(layout)), deterministic_(s.deterministic),
      sharedMemory_(s.sharedMemory) {
  for (int c = 0; c < s.maxChannels; ++c) rings_.push_back(layout_.ring(c, s.ringOrder));
  tuning_ = TuneContext::fromLayout(layout_, rings_[0], s.maxChannels, s.channelsForced, s.maxChunkBytes);
  tuning_.filter = s.filter;
  tuning_.hostBlock = sharedMemory_ && layout_.nnodes() == 1 && layout_.nranks() > 1 &&
                      layout_.nranks() <= kHostBlockMaxRanks && allowedForSome(Algorithm::kOneShot);
  for (int which = 0; which < 2; ++which) allReduceTrees_[which] = rankTreeNeighbors(layout_, which, -1, rank_);
}

void CallPlanner::setTuning(const TuneContext& tuning) {
  std::lock_guard<std::mutex> lock(*cacheMutex_);
  tuning_ = tuning;
  cache_.clear();
  id_ = nextId();  // threads' last answers were another model's
}

TuneChoice CallPlanner::choose(const CallShape& call) {
  const int nranks = tuning_.nranks;
  TuneChoice choice{Algorithm::kRing, 1, tuning_.maxChunkBytes, 0};
  const bool p2p = call.collective == Collective::kSend || call.collective == Collective::kRecv;
  if (!p2p && nranks > 1) {
    const size_t bytes = callBytes(call, nranks);
    const uint64_t key = (static_cast<uint64_t>(call.collective) << 56) ^ (uint64_t{call.onDevice} << 55) ^ bytes;
    // A loop of one call repeated asks the same: this thread's last answer
    // costs no lock (a choice never changes for one planner).
    struct Memo {
      uint64_t planner = 0, key = 0;
      TuneChoice choice;
    };
    static thread_local Memo last;
    if (last.planner == id_ && last.key == key) {
      choice = last.choice;
    } else {
      std::lock_guard<std::mutex> lock(*cacheMutex_);
      auto hit = cache_.find(key);
      if (hit != cache_.end()) {
        choice = hit->second;
      } else {
        choice = tune(tuning_, call.collective, bytes, call.onDevice);
        if (cache_.size() >= 4096) cache_.clear();  // bounded for jobs of many sizes
        cache_.emplace(key, choice);
      }
      last = {id_, key, choice};
    }
  }
  // One-shot sums in rank order already.
  if (deterministic_ && reducesAcrossRanks(call.collective) && nranks > 1 && choice.algorithm != Algorithm::kOneShot)
    choice.algorithm = Algorithm::kOrdered;
  return choice;
}

void CallPlanner::build(const CallShape& call, const TuneChoice& choice, Plan* plan) const {
  PlanRequest r;
  r.collective = call.collective;
  r.nranks = tuning_.nranks;
  r.rank = rank_;
  r.root = call.root;
  r.peer = call.root;
  r.count = call.count;
  r.elemSize = call.elemSize;
  r.rings = &rings_;
  r.layout = &layout_;
  r.allReduceTrees = allReduceTrees_;
  r.onDevice = call.onDevice;
  if (choice.algorithm == Algorithm::kOrdered) r.orderedChain = orderedChain(call);
  r.algorithm = choice.algorithm;
  r.nchannels = choice.nchannels;
  buildPlan(r, plan);
}

TuneChoice CallPlanner::plan(const CallShape& call, Plan* plan) {
  const TuneChoice choice = choose(call);
  build(call, choice, plan);
  return choice;
}

// The chain has the fewest messages; the reduce-scatter and all-gather
// spread the additions, which the chain leaves to its last rank: over TCP
// on two cores that rank is the bottleneck from 16 MiB up, while up to
// 4 MiB the chain led where the two were compared side by side (4 ranks;
// bench/results/deterministic_and_checks.md). Over shared memory alone,
// where a hop is a copy and no system call, the chain led at every size:
// the reduce-scatter's owners each wait for every rank's chunk in
// lockstep, which ranks sharing cores pay for.
// TUTTI_ALGO picks one: tree for the chain, ring for the other.
bool CallPlanner::orderedChain(const CallShape& call) const {
  constexpr size_t kChainMaxBytes = 4 << 20;
  const bool chain = tuning_.filter.allows(call.collective, Algorithm::kTree);
  const bool ring = tuning_.filter.allows(call.collective, Algorithm::kRing);
  if (chain != ring) return chain;
  if (tuning_.nnodes == 1 && sharedMemory_) return true;
  return callBytes(call, tuning_.nranks) <= kChainMaxBytes;
}

bool CallPlanner::allowedForSome(Algorithm a) const {
  for (int c = 0; c < kNumCollectives; ++c)
    if (tuning_.filter.allows(static_cast<Collective>(c), a) && algorithmSupports(a, static_cast<Collective>(c)))
      return true;
  return false;
}

bool CallPlanner::oneShotAllowed() const {
  for (int a = 0; a < kNumAlgorithms; ++a)
    if (onOneShotChannel(static_cast<Algorithm>(a)) && allowedForSome(static_cast<Algorithm>(a))) return true;
  return false;
}

Plan CallPlanner::initEdges() const {
  Plan edges;
  const int nranks = tuning_.nranks;
  if (nranks == 1) return edges;
  for (int c = 0; c < channels(); ++c) {
    const std::vector<int>& ring = rings_[c];
    size_t pos = 0;
    while (ring[pos] != rank_) ++pos;
    ChannelProgram p;
    p.channel = c;
    addStep(&p.steps, StepKind::kRecvCopySend, ring[(pos + nranks - 1) % nranks], ring[(pos + 1) % nranks], 0, 0, 0);
    edges.channels.push_back(p);
  }
  // One host's one-shot calls meet in the host block instead.
  const bool oneShotConnections = !tuning_.hostBlock && layout_.nranks() <= kOneShotMaxRanks && oneShotAllowed();
  if (oneShotConnections) {
    ChannelProgram p;
    p.channel = kOneShotChannel;
    for (int peer = 0; peer < nranks; ++peer)
      if (peer != rank_) addStep(&p.steps, StepKind::kRecvCopySend, peer, peer, 0, 0, 0);
    edges.channels.push_back(p);
  }
  return edges;
}

}  // namespace tutti
