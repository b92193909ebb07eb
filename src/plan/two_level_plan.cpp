// Two-level all-reduces, for calls across nodes too big for recursive
// doubling to send whole and too small for a pipeline. Inside each node the
// ranks reduce-scatter by recursive halving (each ends with the node's sum
// of one block), the ranks holding the same block on every node all-reduce
// it across nodes, and inside each node the ranks all-gather the blocks
// back by recursive doubling. Across nodes, either
// - recursive doubling on the whole block (kTwoLevel): log2(nodes) rounds,
//   a node's link carrying the buffer once a round, where recursive
//   doubling sends it once from every rank of the node; or
// - recursive halving, then doubling (kHalvingDoubling, Rabenseifner's):
//   twice the rounds, and a node's link carries 2(m-1)/m of the buffer in
//   all for m nodes, as a ring's would, in log2 rounds instead of m - 1.
//   Where m is not a power of two, a ring of the nodes instead: it carries
//   the same 2(m-1)/m, where folding the nodes past the largest power of
//   two into partners would carry twice the block through a partner's link
//   (3 x 2 on 4 Gbit/s links, from 16 MiB: busbw 0.48-0.53 GB/s, where
//   every algorithm before it stayed under 0.475 of the link's 0.5).
// Needs every node to hold the same power-of-two number of ranks (else it
// is recursive doubling). For kTwoLevel, nodes past the largest power of
// two fold their block into a partner node's first and take the result
// back last. Runs on the one-shot channel (connections to every rank,
// tagged chunks); each round that covers another range of the buffer than
// the one before is a phase of its own (ChannelProgram::phaseStarts).
//
// Halving-doubling with several ranks a node pipelines large calls
// (twoLevelSegments): the buffer goes in segments, the rounds inside nodes
// in one program and those across in another, each segment's crossing
// gated on its reduction inside and its gathering on its crossing
// (ChannelProgram::gates). So the node's link carries one segment while
// shared memory reduces the next and gathers the one before, where one
// program runs the three one after another.
#include <algorithm>
#include <array>

#include "src/plan/plan_internal.h"

namespace tutti {

namespace {

bool isPowerOfTwo(int v) { return v > 0 && (v & (v - 1)) == 0; }

// Steps of one rank's program, with what they need to know of each other.
class TwoLevelSteps {
 public:
  // `fromOutput`: the partial sums are in the output already (the rounds
  // across nodes of a pipelined call, in a program of their own).
  TwoLevelSteps(ChannelProgram* program, size_t elemSize, bool fromOutput = false)
      : program_(program), elemSize_(elemSize), fromOutput_(fromOutput) {}

  // Starts a phase (none before the first step).
  void phase() {
    if (!program_->steps.empty()) program_->phaseStarts.push_back(program_->steps.size());
  }
  // Piece j of `whole` cut into n (and the k pieces from j on), of which
  // only `used` (a power of two dividing n) hold data: pieces 0, n/used, ...
  Slice piece(const Slice& whole, int n, int j, int k = 1, int used = 0) const {
    if (used <= 0) used = n;
    auto start = [&](int at) { return blockStart(whole.count, used, (at * used + n - 1) / n, elemSize_); };
    const size_t b = start(j), e = start(j + k);
    return Slice{whole.begin + b, e - b};
  }
  // Swaps with `partner` over a group of n ranks numbered by `at`: gives the
  // half it does not keep, adds the partner's part of the half it keeps.
  // Returns the kept range.
  Slice halve(const Slice& whole, int n, int at, int k, int partner, bool final, int used = 0) {
    const int base = at & ~(2 * k - 1);
    const bool lower = (at & k) == 0;
    const Slice give = piece(whole, n, lower ? base + k : base, k, used);
    const Slice keep = piece(whole, n, lower ? base : base + k, k, used);
    phase();
    send(partner, give);
    add(partner, keep, final);
    return keep;
  }
  // Swaps held pieces [at & ~(k-1), +k) with `partner`, who holds the next k.
  void doubleUp(const Slice& whole, int n, int at, int k, int partner, int used = 0) {
    const int base = at & ~(k - 1);
    phase();
    send(partner, piece(whole, n, base, k, used));
    receive(partner, piece(whole, n, base ^ k, k, used));
  }
  void send(int peer, const Slice& s) {
    addStep(&program_->steps, StepKind::kSend, -1, peer, s.begin, 0, s.count, false, fromOutput_);
  }
  void add(int peer, const Slice& s, bool final) {
    addStep(&program_->steps, StepKind::kRecvReduceCopy, peer, -1, s.begin, s.begin, s.count, final, fromOutput_);
    fromOutput_ = true;  // the partial sum is in the output from here on
  }
  void receive(int peer, const Slice& s) {
    addStep(&program_->steps, StepKind::kRecv, peer, -1, 0, s.begin, s.count, true);
  }
  // A ring all-reduce of `whole` among n places, this one at `at`, in one
  // phase: piece `at` leaves, the pieces behind it gather partial sums on
  // the way round, then the sums go round once more.
  void ring(const Slice& whole, int n, int at, int prev, int next) {
    auto pieceAt = [&](int k) { return piece(whole, n, ((at + k) % n + n) % n); };
    auto step = [&](StepKind kind, const Slice& s, bool final) {
      addStep(&program_->steps, kind, prev, next, s.begin, s.begin, s.count, final, fromOutput_);
    };
    phase();
    send(next, pieceAt(0));
    for (int k = 1; k < n - 1; ++k) step(StepKind::kRecvReduceSend, pieceAt(-k), false);
    step(StepKind::kRecvReduceCopySend, pieceAt(1), true);
    fromOutput_ = true;
    for (int k = 1; k < n - 1; ++k) step(StepKind::kRecvCopySend, pieceAt(1 - k), false);
    receive(prev, pieceAt(2));
  }

 private:
  ChannelProgram* program_;
  size_t elemSize_;
  bool fromOutput_;
};

// Where a rank sits in the layout, and the ranks it swaps with.
struct TwoLevelRank {
  TwoLevelRank(const NodeLayout& layout, int rank)
      : layout(layout),
        perNode(static_cast<int>(layout.ranksOf(0).size())),
        nodes(layout.nnodes()),
        node(layout.nodeOf(rank)),
        local(layout.localIndex(rank)) {
    while (nodes2 * 2 <= nodes) nodes2 *= 2;
  }
  int localRank(int l) const { return layout.ranksOf(node)[l]; }
  int onNode(int m) const { return layout.ranksOf(m)[local]; }

  const NodeLayout& layout;
  const int perNode, nodes, node, local;
  int nodes2 = 1;  // the largest power of two of nodes
};

// Reduce-scatter inside the node: this rank ends with block `local` of
// `whole` (empty on a rank that does not cross: twoLevelCrossers).
Slice reduceInside(TwoLevelSteps& steps, const TwoLevelRank& at, const Slice& whole, int crossing) {
  for (int k = at.perNode / 2; k >= 1; k /= 2)
    steps.halve(whole, at.perNode, at.local, k, at.localRank(at.local ^ k), false, crossing);
  return steps.piece(whole, at.perNode, at.local, 1, crossing);
}

// All-gather inside the node: double the blocks held each round.
void gatherInside(TwoLevelSteps& steps, const TwoLevelRank& at, const Slice& whole, int crossing) {
  for (int k = 1; k < at.perNode; k *= 2)
    steps.doubleUp(whole, at.perNode, at.local, k, at.localRank(at.local ^ k), crossing);
}

// Halving-doubling's rounds across nodes on `mine`, among the ranks of this place.
void halvingAcross(TwoLevelSteps& steps, const TwoLevelRank& at, const Slice& mine) {
  const int node = at.node, nodes = at.nodes, nodes2 = at.nodes2;
  if (nodes2 < nodes)
    return steps.ring(mine, nodes, node, at.onNode((node + nodes - 1) % nodes), at.onNode((node + 1) % nodes));
  for (int k = nodes2 / 2; k >= 1; k /= 2) steps.halve(mine, nodes2, node, k, at.onNode(node ^ k), k == 1);
  for (int k = 1; k < nodes2; k *= 2) steps.doubleUp(mine, nodes2, node, k, at.onNode(node ^ k));
}

// Phases in `p` so far: the index its next phase will have.
size_t phasesOf(const ChannelProgram& p) { return p.steps.empty() ? 0 : p.phaseStarts.size() + 1; }

// A pipelined halving-doubling (see the top): `inside` reduces segment k + 1
// while `across` carries k, then gathers k back.
void planPipelinedHalvingDoubling(const PlanRequest& r, const TwoLevelRank& at, int segments, Plan* plan,
                                  size_t* used) {
  const size_t insideAt = *used;
  newProgram(plan, kOneShotChannel, used);
  const size_t acrossAt = *used;
  newProgram(plan, kOneShotChannel, used);
  ChannelProgram& inside = plan->channels[insideAt];  // both made: no reallocation from here
  ChannelProgram& across = plan->channels[acrossAt];
  for (ChannelProgram* p : {&inside, &across}) {
    p->sendsAhead = true;
    p->sentBytesStay = true;
  }
  // Phases of `across` once segment k crossed (no allocation: plans are rebuilt call after call).
  std::array<size_t, kTwoLevelMaxSegments> crossed{};
  auto segment = [&](int k) { return channelSlice(0, r.count, segments, k, r.elemSize); };
  auto gather = [&](int k) {
    inside.gates.push_back({phasesOf(inside), acrossAt, crossed[k]});
    TwoLevelSteps steps(&inside, r.elemSize, true);
    gatherInside(steps, at, segment(k), at.perNode);
  };
  for (int k = 0; k < segments; ++k) {
    TwoLevelSteps reduce(&inside, r.elemSize);
    const Slice mine = reduceInside(reduce, at, segment(k), at.perNode);
    across.gates.push_back({phasesOf(across), insideAt, phasesOf(inside)});
    TwoLevelSteps cross(&across, r.elemSize, true);
    halvingAcross(cross, at, mine);
    crossed[k] = phasesOf(across);
    if (k > 0) gather(k - 1);
  }
  gather(segments - 1);
  setPhaseLinksByPeers(r, &inside);
  setPhaseLinksByPeers(r, &across);
}

}  // namespace

int twoLevelCrossers(size_t bytes, int perNode) {
  int crossers = perNode;
  while (crossers > 1 && bytes / crossers < kTwoLevelMinBlockBytes) crossers /= 2;
  return crossers;
}

bool twoLevelFits(const NodeLayout& layout, int minRanksPerNode) {
  const int perNode = static_cast<int>(layout.ranksOf(0).size());
  if (layout.nnodes() < 2 || perNode < minRanksPerNode || !isPowerOfTwo(perNode)) return false;
  for (int m = 1; m < layout.nnodes(); ++m)
    if (static_cast<int>(layout.ranksOf(m).size()) != perNode) return false;
  return true;
}

int twoLevelSegments(size_t bytes, int perNode, size_t segmentBytes) {
  if (perNode < 2 || segmentBytes == 0) return 1;
  return static_cast<int>(std::clamp<size_t>(bytes / segmentBytes, 1, kTwoLevelMaxSegments));
}

void planTwoLevelChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used) {
  const bool halveAcross = r.algorithm == Algorithm::kHalvingDoubling;
  if (!r.layout || !twoLevelFits(*r.layout, halveAcross ? 1 : 2))
    return planRecursiveDoublingChannel(r, channel, plan, used);
  const TwoLevelRank at(*r.layout, r.rank);
  const int segments = halveAcross ? twoLevelSegments(r.count * r.elemSize, at.perNode, r.twoLevelSegmentBytes) : 1;
  if (segments > 1) return planPipelinedHalvingDoubling(r, at, segments, plan, used);
  const int perNode = at.perNode, nodes = at.nodes, node = at.node, nodes2 = at.nodes2;
  ChannelProgram& program = newProgram(plan, kOneShotChannel, used);
  program.sendsAhead = true;  // each swap's send leads its phase
  // Halving gives away the half it keeps no more, and what comes back into
  // it is what the partner made of it.
  program.sentBytesStay = halveAcross;
  TwoLevelSteps steps(&program, r.elemSize);
  auto onNode = [&](int m) { return at.onNode(m); };
  const Slice all{0, r.count};

  const int crossing = twoLevelCrossers(r.count * r.elemSize, perNode);
  const Slice mine = reduceInside(steps, at, all, crossing);

  // Across nodes, on that block, among the ranks of this place.
  const bool extra = node >= nodes2, hasExtra = node + nodes2 < nodes;
  if (halveAcross) {
    halvingAcross(steps, at, mine);
  } else if (extra) {  // in, then the result back, walked as the partner walks them
    steps.phase();
    steps.send(onNode(node - nodes2), mine);
    steps.receive(onNode(node - nodes2), mine);
  } else {
    // One phase: every round covers the block, so its chunks flow through
    // the rounds one after another (as in recursive_doubling_plan.cpp).
    steps.phase();
    if (hasExtra) steps.add(onNode(node + nodes2), mine, false);
    for (int k = 1; k < nodes2; k *= 2) {
      steps.send(onNode(node ^ k), mine);
      steps.add(onNode(node ^ k), mine, k * 2 == nodes2);
    }
    if (hasExtra) steps.send(onNode(node + nodes2), mine);
  }
  gatherInside(steps, at, all, crossing);
  // Each phase above swaps inside the node or across it, never both, and
  // its partner's phase holds the same swap.
  setPhaseLinksByPeers(r, &program);
}

}  // namespace tutti
