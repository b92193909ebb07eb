// Recursive doubling all-reduce, for small calls across nodes: in round k
// each rank swaps its partial sum with the rank 2^k places away and adds it,
// so after log2(n) rounds every rank has the sum. A round is one hop, both
// ways at once, where a ring takes 2(n-1) hops and a tree twice its depth;
// every rank sends the whole buffer each round, so the cost model keeps it
// to small sizes. Places follow the ring order, which keeps each node's
// ranks together: the first rounds stay inside nodes, the last cross them.
// With n not a power of two, the p2 = 2^floor(log2 n) first places do the
// rounds; each of the n - p2 others first hands its input to the place p2
// before it and at the end takes the result from there. Runs on the
// one-shot channel (connections to every rank, tagged chunks).
#include "src/plan/plan_internal.h"

namespace tutti {

void planRecursiveDoublingChannel(const PlanRequest& r, int, Plan* plan, size_t* used) {
  const int n = r.nranks;
  ChannelProgram& program = newProgram(plan, kOneShotChannel, used);
  std::vector<Step>& steps = program.steps;
  auto rankAt = [&](int place) { return r.rings && !r.rings->empty() ? (*r.rings)[0][place] : place; };
  int me = 0;
  while (rankAt(me) != r.rank) ++me;
  int p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  const size_t count = r.count;
  if (me >= p2) {  // an extra place: in, then the result back
    addStep(&steps, StepKind::kSend, -1, rankAt(me - p2), 0, 0, count);
    addStep(&steps, StepKind::kRecv, rankAt(me - p2), -1, 0, 0, count, true);
    return;
  }
  bool fromOutput = false;  // the partial sum is in the output once a step wrote it
  if (me + p2 < n) {
    addStep(&steps, StepKind::kRecvReduceCopy, rankAt(me + p2), -1, 0, 0, count);
    fromOutput = true;
  }
  for (int k = 1; k < p2; k *= 2) {
    const int partner = rankAt(me ^ k);
    addStep(&steps, StepKind::kSend, -1, partner, 0, 0, count, false, fromOutput);
    addStep(&steps, StepKind::kRecvReduceCopy, partner, -1, 0, 0, count, k * 2 == p2, fromOutput);
    fromOutput = true;
  }
  if (!fromOutput) addStep(&steps, StepKind::kCopy, -1, -1, 0, 0, count, true);  // one rank alone
  if (me + p2 < n) addStep(&steps, StepKind::kSend, -1, rankAt(me + p2), 0, 0, count, false, true);
}

}  // namespace tutti
