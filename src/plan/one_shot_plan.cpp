// One-shot collectives, for small calls: every rank sends its part straight
// to each rank that needs it, and a receiver that combines takes all of
// them at once, in rank order (kRecvAllReduceCopy). One hop of latency
// where a ring takes n-1 or 2(n-1); the price is that each rank sends its
// buffer n-1 times, so the cost model keeps it to small sizes and few
// ranks. Its sums are rank-ordered, so TUTTI_DETERMINISTIC may use it too.
#include "src/plan/plan_internal.h"

namespace tutti {

void planOneShotChannel(const PlanRequest& r, int c, Plan* plan, size_t* used) {
  const int n = r.nranks, me = r.rank;
  if (r.collective == Collective::kReduceScatter) {  // the ordered one is one-shot already
    const size_t first = *used;
    planOrderedChannel(r, c, plan, used);
    for (size_t i = first; i < *used; ++i) plan->channels[i].channel = kOneShotChannel;
    return;
  }
  ChannelProgram& program = newProgram(plan, c, used);
  program.channel = kOneShotChannel;
  std::vector<Step>& steps = program.steps;
  const Slice s = channelSlice(0, r.count, r.nchannels, c, r.elemSize);
  auto sumAll = [&] {
    addStep(&steps, StepKind::kRecvAllReduceCopy, -1, -1, s.begin, s.begin, s.count, true);
    steps.back().allRanks = n;
  };
  // Peers from the one after this rank, so no rank is everyone's first.
  auto sendToOthers = [&](size_t out) {
    for (int k = 1; k < n; ++k) addStep(&steps, StepKind::kSend, -1, (me + k) % n, s.begin, out, s.count);
  };
  switch (r.collective) {
    case Collective::kAllReduce:
      sendToOthers(s.begin);
      sumAll();
      break;
    case Collective::kReduce:
      if (me == r.root) sumAll();
      else addStep(&steps, StepKind::kSend, -1, r.root, s.begin, s.begin, s.count);
      break;
    case Collective::kBroadcast:
      if (me == r.root) {
        addStep(&steps, StepKind::kCopy, -1, -1, s.begin, s.begin, s.count, true);
        sendToOthers(s.begin);
      } else {
        addStep(&steps, StepKind::kRecv, r.root, -1, s.begin, s.begin, s.count, true);
      }
      break;
    case Collective::kAllGather:
      addStep(&steps, StepKind::kCopy, -1, -1, s.begin, me * r.count + s.begin, s.count, true);
      sendToOthers(s.begin);
      for (int k = 1; k < n; ++k) {
        const int from = (me + n - k) % n;
        addStep(&steps, StepKind::kRecv, from, -1, s.begin, from * r.count + s.begin, s.count, true);
      }
      break;
    default:
      break;
  }
}

}  // namespace tutti
