// Two-level all-reduce, for calls across nodes too big for recursive
// doubling to send whole and too small for a pipeline: inside each node the
// ranks reduce-scatter by recursive halving (each ends with the node's sum
// of one block), the ranks holding the same block on every node all-reduce
// it by recursive doubling across nodes, and inside each node the ranks
// all-gather the blocks back by recursive doubling. A node's link carries
// the buffer once each way per round across, where recursive doubling
// sends it once from every rank of the node. Needs every node to hold the
// same power-of-two number of ranks (else it is recursive doubling).
// Runs on the one-shot channel (connections to every rank, tagged chunks).
#include "src/plan/plan_internal.h"

namespace tutti {

namespace {

bool isPowerOfTwo(int v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

bool twoLevelFits(const NodeLayout& layout) {
  const int perNode = static_cast<int>(layout.ranksOf(0).size());
  if (layout.nnodes() < 2 || perNode < 2 || !isPowerOfTwo(perNode)) return false;
  for (int m = 1; m < layout.nnodes(); ++m)
    if (static_cast<int>(layout.ranksOf(m).size()) != perNode) return false;
  return true;
}

void planTwoLevelChannel(const PlanRequest& r, Plan* plan, size_t* used) {
  if (!r.layout || !twoLevelFits(*r.layout)) return planRecursiveDoublingChannel(r, plan, used);
  const NodeLayout& layout = *r.layout;
  const int perNode = static_cast<int>(layout.ranksOf(0).size()), nodes = layout.nnodes();
  const int node = layout.nodeOf(r.rank), local = layout.localIndex(r.rank);
  ChannelProgram& program = newProgram(plan, kOneShotChannel, used);
  std::vector<Step>& steps = program.steps;
  // Each round a phase of its own: its range is not the one before's.
  auto round = [&] {
    if (!steps.empty()) program.phaseStarts.push_back(steps.size());
  };
  // Blocks [first, first + k) of the buffer cut into one per local rank.
  auto range = [&](int first, int k) {
    const size_t b = blockStart(r.count, perNode, first, r.elemSize);
    return Slice{b, blockStart(r.count, perNode, first + k, r.elemSize) - b};
  };
  auto localRank = [&](int l) { return layout.ranksOf(node)[l]; };

  // Reduce-scatter inside the node: halve the blocks held each round.
  bool fromOutput = false;
  for (int k = perNode / 2; k >= 1; k /= 2) {
    const int base = local & ~(2 * k - 1);
    const bool lower = (local & k) == 0;
    const Slice give = range(lower ? base + k : base, k), keep = range(lower ? base : base + k, k);
    const int partner = localRank(local ^ k);
    round();
    addStep(&steps, StepKind::kSend, -1, partner, give.begin, 0, give.count, false, fromOutput);
    addStep(&steps, StepKind::kRecvReduceCopy, partner, -1, keep.begin, keep.begin, keep.count, false, fromOutput);
    fromOutput = true;
  }

  // Across nodes, the block of this rank's place: recursive doubling among
  // the ranks of that place, nodes past the largest power of two folded in
  // first and served last.
  const Slice mine = range(local, 1);
  auto onNode = [&](int m) { return layout.ranksOf(m)[local]; };
  int nodes2 = 1;
  while (nodes2 * 2 <= nodes) nodes2 *= 2;
  if (node >= nodes2) {
    round();
    addStep(&steps, StepKind::kSend, -1, onNode(node - nodes2), mine.begin, 0, mine.count, false, true);
    round();  // the result comes back only once every chunk went in
    addStep(&steps, StepKind::kRecv, onNode(node - nodes2), -1, 0, mine.begin, mine.count, true);
  } else {
    round();
    if (node + nodes2 < nodes)
      addStep(&steps, StepKind::kRecvReduceCopy, onNode(node + nodes2), -1, mine.begin, mine.begin, mine.count,
              false, true);
    for (int k = 1; k < nodes2; k *= 2) {
      const int partner = onNode(node ^ k);
      round();
      addStep(&steps, StepKind::kSend, -1, partner, mine.begin, 0, mine.count, false, true);
      addStep(&steps, StepKind::kRecvReduceCopy, partner, -1, mine.begin, mine.begin, mine.count, k * 2 == nodes2,
              true);
    }
    round();
    if (node + nodes2 < nodes)
      addStep(&steps, StepKind::kSend, -1, onNode(node + nodes2), mine.begin, 0, mine.count, false, true);
  }

  // All-gather inside the node: double the blocks held each round.
  for (int k = 1; k < perNode; k *= 2) {
    const int base = local & ~(k - 1);
    const Slice have = range(base, k), take = range(base ^ k, k);
    const int partner = localRank(local ^ k);
    round();
    addStep(&steps, StepKind::kSend, -1, partner, have.begin, 0, have.count, false, true);
    addStep(&steps, StepKind::kRecv, partner, -1, 0, take.begin, take.count, true);
  }
}

}  // namespace tutti
