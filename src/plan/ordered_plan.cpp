// Rank-ordered reductions (TUTTI_DETERMINISTIC): every element is combined
// as ((x0 + x1) + x2) + ..., whatever the channel count, chunk size or
// transport. IEEE addition is commutative, so only the grouping matters,
// and these plans fix it to rank order:
// - reduce-scatter: each rank sends every other rank that rank's block, and
//   the owner adds them up in rank order, its own in turn, in one pass
//   (kRecvAllReduceCopy): as many bytes leave each rank as in a ring, each
//   rank sums only its own block, and no partial sum goes back to memory;
// - all-reduce: that reduce-scatter over blocks of the output, then a ring
//   all-gather of the finished blocks, so the additions are spread evenly;
//   or, for small calls (CallPlanner::orderedChain), a chain 0 -> 1 -> ...
//   -> n-1, each rank adding its input to what arrives, and the sum sent
//   back down;
// - reduce: the chain up, the last rank sending the sum to the root.
// Sends and sums share one program: chunk by chunk in lockstep, as a ring
// goes, which keeps the sockets' queues short.
#include <functional>

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

// Where rank j's block of this channel lies: in the input and in the
// output (scratch until final).
struct Block {
  size_t in, out, count;
};

// `me` sends block j to rank j, for every other j, then sums its own block
// from ranks 0..n-1 in order, into the real output and, with passOn >= 0,
// on to that rank.
void directReduceScatter(int me, int n, const std::function<Block(int)>& blockOf, int passOn,
                         std::vector<Step>* steps) {
  for (int k = 1; k < n; ++k) {  // starting after itself, so the owners' first senders differ
    const int j = (me + k) % n;
    const Block b = blockOf(j);
    addStep(steps, StepKind::kSend, -1, j, b.in, b.out, b.count);
  }
  const Block mine = blockOf(me);
  addStep(steps, passOn >= 0 ? StepKind::kRecvAllReduceCopySend : StepKind::kRecvAllReduceCopy, -1, passOn,
          mine.in, mine.out, mine.count, true);
  steps->back().allRanks = n;
}

}  // namespace

void planOrderedChannel(const PlanRequest& r, int c, Plan* plan, size_t* used) {
  const int n = r.nranks, me = r.rank, last = n - 1;
  const Slice s = channelSlice(0, r.count, r.nchannels, c, r.elemSize);
  std::vector<Step>& steps = newProgram(plan, c, used).steps;
  switch (r.collective) {
    case Collective::kAllReduce: {
      if (r.orderedChain) {  // up the chain, and the sum back down
        if (me == last) addStep(&steps, StepKind::kRecvReduceCopySend, me - 1, me - 1, s.begin, s.begin, s.count, true);
        else chainUp(me, n, s.begin, s.begin, s.count, -1, &steps);
        // Down as a program of its own: sums flow up while results flow down.
        if (me != last)
          addStep(&newProgram(plan, c, used).steps, me == 0 ? StepKind::kRecv : StepKind::kRecvCopySend, me + 1,
                  me - 1, s.begin, s.begin, s.count, true);
        break;
      }
      // Blocks of the whole buffer, as the ring splits it, then this channel's part.
      auto blockOf = [&](int j) {
        const size_t b = blockStart(r.count, n, j, r.elemSize), e = blockStart(r.count, n, j + 1, r.elemSize);
        const Slice part = channelSlice(b, e - b, r.nchannels, c, r.elemSize);
        return Block{part.begin, part.begin, part.count};
      };
      const int next = (me + 1) % n, prev = (me + n - 1) % n;
      directReduceScatter(me, n, blockOf, next, &steps);
      // All-gather round the ring: the block of the rank k back arrives at step k.
      for (int k = 1; k < n; ++k) {
        const Block b = blockOf((me + n - k) % n);
        addStep(&steps, k < n - 1 ? StepKind::kRecvCopySend : StepKind::kRecv, prev, next, 0, b.out, b.count, true);
      }
      break;
    }
    case Collective::kReduce: {
      chainUp(me, n, s.begin, s.begin, s.count, r.root == last ? -1 : r.root, &steps);
      if (me == r.root && me != last)
        addStep(&newProgram(plan, c, used).steps, StepKind::kRecv, last, -1, s.begin, s.begin, s.count);
      break;
    }
    case Collective::kReduceScatter: {
      auto blockOf = [&](int j) { return Block{static_cast<size_t>(j) * r.count + s.begin, s.begin, s.count}; };
      directReduceScatter(me, n, blockOf, -1, &steps);
      break;
    }
    default:
      break;
  }
}

// A device's ordered sums accumulate in scratch (the host's in a tile that
// stays in cache): the output may be the input, added in its turn.
void orderedScratch(const PlanRequest& r, Plan* plan) {
  if (!r.onDevice || r.collective == Collective::kReduce) return;
  plan->scratchBytes = r.count * r.elemSize;
  plan->finalToOutput = true;
}

}  // namespace tutti
