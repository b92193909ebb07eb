// Builds one rank's Plan for one call: the algorithm's entry
// (src/plan/algorithms.h) over the channels the cost model chose. Rings
// follow a given order per channel (nodes kept together); trees follow the
// double binary tree of the node layout. Each channel runs the algorithm
// over its own slice of the data, over its own connections, independently
// of the others.
#pragma once

#include <cstddef>
#include <vector>

#include "src/plan/layout.h"
#include "src/plan/plan.h"
#include "src/plan/tree.h"

namespace tutti {

// A pipelined halving-doubling's segments hold this much at least
// (twoLevelSegments), and there are at most kTwoLevelMaxSegments.
constexpr size_t kTwoLevelSegmentBytes = 2 << 20;
constexpr int kTwoLevelMaxSegments = 8;

struct PlanRequest {
  Collective collective = Collective::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  int nranks = 1;
  int rank = 0;
  int root = 0;         // broadcast, reduce
  size_t count = 0;     // allreduce/broadcast/reduce: elements; allgather: per-rank send
                        // count; reducescatter: per-rank receive count
  int nchannels = 1;
  int peer = -1;        // send, recv
  size_t elemSize = 4;  // bytes per element, for cache-line aligned blocks
  // Ring order of each channel (channel c uses rings[c % size]); null: rank order.
  const std::vector<std::vector<int>>* rings = nullptr;
  const NodeLayout* layout = nullptr;  // required for trees
  // This rank's links in the two unrooted trees (all-reduce), computed once
  // per communicator; null: computed per call from the layout.
  const TreeNeighbors* allReduceTrees = nullptr;
  // An ordered all-reduce as a chain (else reduce-scatter and all-gather).
  bool orderedChain = false;
  bool onDevice = false;  // device buffers (scratch where kernels reach it)
  // A pipelined halving-doubling's least segment (twoLevelSegments); tests
  // make it small.
  size_t twoLevelSegmentBytes = kTwoLevelSegmentBytes;
};

// Fills `plan` (reusing its storage, so steady-state calls do not allocate).
void buildPlan(const PlanRequest& request, Plan* plan);

// The one kind of link between the pairs of ranks in `layout`, or kBoth
// where they have both (or no layout is known): its chunks fit every
// connection of the layout.
OneShotLink narrowestOneShotLink(const NodeLayout* layout);

// Whether the two-level all-reduces fit the layout: several nodes, each of
// the same power-of-two number of ranks, at least `minRanksPerNode`
// (two_level_plan.cpp).
bool twoLevelFits(const NodeLayout& layout, int minRanksPerNode);

// How many of a node's `perNode` ranks hold a block of a two-level
// all-reduce of `bytes` and cross nodes with it (a power of two): none
// with a block under kTwoLevelMinBlockBytes, but one at least.
int twoLevelCrossers(size_t bytes, int perNode);
// Small calls cross from one rank a node: each crosser is a round of
// sockets of its own. 2 x 2 namespace nodes on veth, sharing 2 cores,
// two-level from one rank a node against from both: 8 B to 4 KiB 16-20 us
// against 28-32 (medians of 6 launches), 32 KiB 34 against 37; 64 KiB 64
// against 40, 128 KiB 140 against 91.
constexpr size_t kTwoLevelMinBlockBytes = 32 << 10;

// Halving-doubling with several ranks a node pipelines large calls: the
// buffer goes in segments, a segment crossing nodes while the next is
// reduced inside them and the one before gathered back. How many segments
// (1: no pipeline) for `bytes` in segments of `segmentBytes` at least.
int twoLevelSegments(size_t bytes, int perNode, size_t segmentBytes);

// Start of block j of n over count elements: balanced, and on 64-byte
// boundaries where the count allows (whole cache lines per rank).
size_t blockStart(size_t count, int n, int j, size_t elemSize);

}  // namespace tutti
