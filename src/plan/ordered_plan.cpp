// Rank-ordered reductions (TUTTI_DETERMINISTIC): every element is combined
// as ((x0 + x1) + x2) + ..., whatever the channel count, chunk size or
// transport. IEEE addition is commutative, so only the grouping matters,
// and these plans fix it to rank order:
// - all-reduce and reduce: a chain 0 -> 1 -> ... -> n-1, each rank adding
//   its input to what arrives; rank n-1 holds the result and sends it back
//   down the chain (all-reduce, as a program of its own, so results flow
//   down while partial sums flow up) or to the root (reduce);
// - reduce-scatter: each rank sends every other rank that rank's block, and
//   the owner adds them up in rank order, its own in turn: as many bytes
//   leave each rank as in a ring, and each rank sums only its own block.
#include "src/plan/plan_internal.h"

namespace tutti {

namespace {

// Rank `me` adds its part of [in, in + count) to the chain; the last rank
// keeps the sum in the output at `out` (sendTo < 0) or sends it on.
void chainUp(int me, int n, size_t in, size_t out, size_t count, int sendTo, std::vector<Step>* steps) {
  if (me == 0) addStep(steps, StepKind::kSend, -1, 1, in, out, count);
  else if (me < n - 1) addStep(steps, StepKind::kRecvReduceSend, me - 1, me + 1, in, out, count);
  else if (sendTo < 0) addStep(steps, StepKind::kRecvReduceCopy, me - 1, -1, in, out, count, true);
  else addStep(steps, StepKind::kRecvReduceSend, me - 1, sendTo, in, out, count, true);
}

// Reduce-scatter: `me` sends block j to rank j, for every other j (one
// program), and sums its own block from ranks 0..n-1 in order (another).
void directReduceScatter(const PlanRequest& r, int c, const Slice& s, Plan* plan, size_t* used) {
  const int n = r.nranks, me = r.rank;
  auto blockOf = [&](int j) { return static_cast<size_t>(j) * r.count + s.begin; };
  std::vector<Step>& sends = newProgram(plan, c, used).steps;
  for (int k = 1; k < n; ++k) {  // starting after itself, so the owners' first senders differ
    const int j = (me + k) % n;
    addStep(&sends, StepKind::kSend, -1, j, blockOf(j), s.begin, s.count);
  }
  std::vector<Step>& sum = newProgram(plan, c, used).steps;
  // x0 + x1 is the same either way round, so ranks 0 and 1 start with it
  // in one pass over their own block; the others start from x0.
  int from = 2;
  if (me <= 1) addStep(&sum, StepKind::kRecvReduceCopy, 1 - me, -1, blockOf(me), s.begin, s.count, n == 2);
  else from = 0;
  for (; from < n; ++from) {
    const bool last = from == n - 1;
    if (from == 0) addStep(&sum, StepKind::kRecv, 0, -1, 0, s.begin, s.count);
    else if (from == me) addStep(&sum, StepKind::kReduceCopy, -1, -1, blockOf(me), s.begin, s.count, last);
    else addStep(&sum, StepKind::kRecvReduceCopy, from, -1, s.begin, s.begin, s.count, last, true);
  }
}

}  // namespace

void planOrderedChannel(const PlanRequest& r, int c, Plan* plan, size_t* used) {
  const int n = r.nranks, me = r.rank, last = n - 1;
  const Slice s = channelSlice(0, r.count, r.nchannels, c, r.elemSize);
  switch (r.collective) {
    case Collective::kAllReduce: {
      chainUp(me, n, s.begin, s.begin, s.count, -1, &newProgram(plan, c, used).steps);
      if (me == last) addStep(&plan->channels[*used - 1].steps, StepKind::kSend, -1, me - 1, s.begin, s.begin, s.count, false, true);
      else addStep(&newProgram(plan, c, used).steps, me == 0 ? StepKind::kRecv : StepKind::kRecvCopySend, me + 1,
                   me - 1, s.begin, s.begin, s.count);
      break;
    }
    case Collective::kReduce: {
      chainUp(me, n, s.begin, s.begin, s.count, r.root == last ? -1 : r.root, &newProgram(plan, c, used).steps);
      if (me == r.root && me != last)
        addStep(&newProgram(plan, c, used).steps, StepKind::kRecv, last, -1, s.begin, s.begin, s.count);
      break;
    }
    case Collective::kReduceScatter:
      directReduceScatter(r, c, s, plan, used);
      break;
    default:
      break;
  }
}

}  // namespace tutti
