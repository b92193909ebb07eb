// One communicator's planner: the node layout, the ring order of every
// channel, the cost model's inputs, this rank's neighbours in the two
// all-reduce trees, and the cost model's answers cached per (collective,
// bytes). Everything here is identical on every rank, and pure: tested
// without a network.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "src/plan/layout.h"
#include "src/plan/plan.h"
#include "src/plan/tree.h"
#include "src/plan/tuner.h"

namespace tutti {

struct PlannerSettings {
  int maxChannels = 2;
  bool channelsForced = false;
  RingOrder ringOrder = RingOrder::kTopo;
  size_t maxChunkBytes = 128 << 10;
  AlgoFilter filter;
  bool deterministic = false;  // reductions as rank-ordered chains (ordered_plan.cpp)
  bool sharedMemory = true;    // ranks of a node talk through shared memory, not sockets
};

// What the planner needs of one call.
struct CallShape {
  Collective collective = Collective::kAllReduce;
  size_t count = 0;
  size_t elemSize = 4;
  int root = 0;  // broadcast, reduce; the peer of send and recv
  bool onDevice = false;  // device buffers: no one-shot
};

class CallPlanner {
 public:
  CallPlanner() = default;
  CallPlanner(NodeLayout layout, int rank, const PlannerSettings& settings);

  // Fills `plan` with the cost model's choice for the call, and returns it.
  TuneChoice plan(const CallShape& call, Plan* plan);
  // The two halves of plan(): the choice (cached per size), then its steps.
  TuneChoice choose(const CallShape& call);
  void build(const CallShape& call, const TuneChoice& choice, Plan* plan) const;
  // The connections made at init: one step per channel naming both ring
  // neighbours, and when one-shot calls may be chosen on several hosts,
  // the one-shot channel to and from every rank (made later, a rank that
  // dies during their setup would leave its peers' messages naming each
  // other). One host's one-shot calls need none: they meet in the host block.
  Plan initEdges() const;
  // Whether the cost model may pick an algorithm of the one-shot channel
  // (one-shot, recursive doubling) for some collective, by TUTTI_ALGO.
  bool oneShotAllowed() const;
  bool allowedForSome(Algorithm a) const;  // by TUTTI_ALGO

  const NodeLayout& layout() const { return layout_; }
  const TuneContext& tuning() const { return tuning_; }
  // New costs for the model (measured ones): earlier answers are dropped.
  void setTuning(const TuneContext& tuning);
  int channels() const { return static_cast<int>(rings_.size()); }

 private:
  // TUTTI_DETERMINISTIC's all-reduce: a chain, or reduce-scatter and all-gather.
  bool orderedChain(const CallShape& call) const;
  static uint64_t nextId();
  uint64_t id_ = 0;  // tells planners apart in choose()'s memo (0: a planner of no communicator)
  int rank_ = 0;
  NodeLayout layout_;
  std::vector<std::vector<int>> rings_;  // ring order per channel
  TuneContext tuning_;
  bool deterministic_ = false;
  bool sharedMemory_ = true;
  TreeNeighbors allReduceTrees_[2];
  // Searching is microseconds: a small-message call must not pay it every
  // time. Device calls plan on the caller's thread and the background's.
  std::unordered_map<uint64_t, TuneChoice> cache_;
  std::unique_ptr<std::mutex> cacheMutex_ = std::make_unique<std::mutex>();
};

// The bytes a call moves in all: gathered and scattered buffers hold every rank's.
size_t callBytes(const CallShape& call, int nranks);

}  // namespace tutti
