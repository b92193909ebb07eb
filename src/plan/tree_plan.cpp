// Tree algorithms as Steps. Reduce: partial results flow up from the leaves
// (a rank with several children accumulates them in its output, then sends);
// broadcast: the result flows down, each rank passing it to every child.
// All-reduce is both: the root runs one program (up, then down), the other
// ranks run the two halves as separate programs on the same channel, so
// chunks going up and chunks coming down are in flight at once.
#include "src/plan/plan_internal.h"
#include "src/plan/tree.h"

namespace tutti {

namespace {

// Combines the children's chunks with this rank's input; sends the partial
// result up, or at the root leaves the final result in the output.
void reduceUp(const TreeNeighbors& t, const Slice& s, std::vector<Step>* steps) {
  const auto& ch = t.children;
  const bool root = t.parent < 0;
  if (ch.empty()) {
    if (root) addStep(steps, StepKind::kCopy, -1, -1, s.begin, s.begin, s.count, true);
    else addStep(steps, StepKind::kSend, -1, t.parent, s.begin, s.begin, s.count);
    return;
  }
  for (size_t i = 0; i < ch.size(); ++i) {
    const bool last = i + 1 == ch.size();
    const bool fromOutput = i > 0;  // later children add to what the first left in the output
    if (last && !root)
      addStep(steps, StepKind::kRecvReduceSend, ch[i], t.parent, s.begin, s.begin, s.count, false,
              fromOutput);
    else
      addStep(steps, StepKind::kRecvReduceCopy, ch[i], -1, s.begin, s.begin, s.count, last && root,
              fromOutput);
  }
}

// Passes the output down to every child; `haveOutput`: the result is already
// in the output (the all-reduce root), else it comes from the parent, or at a
// broadcast root from the input.
void broadcastDown(const TreeNeighbors& t, const Slice& s, bool haveOutput, std::vector<Step>* steps) {
  const auto& ch = t.children;
  size_t first = 0;
  if (!haveOutput) {
    if (t.parent < 0) {
      StepKind k = ch.empty() ? StepKind::kCopy : StepKind::kCopySend;
      addStep(steps, k, -1, ch.empty() ? -1 : ch[0], s.begin, s.begin, s.count);
    } else {
      StepKind k = ch.empty() ? StepKind::kRecv : StepKind::kRecvCopySend;
      addStep(steps, k, t.parent, ch.empty() ? -1 : ch[0], s.begin, s.begin, s.count);
    }
    first = 1;
  }
  for (size_t i = first; i < ch.size(); ++i)
    addStep(steps, StepKind::kSend, -1, ch[i], s.begin, s.begin, s.count, false, true);
}

}  // namespace

ChannelProgram& newProgram(Plan* plan, int channel, size_t* used) {
  if (*used == plan->channels.size()) plan->channels.emplace_back();
  ChannelProgram& p = plan->channels[(*used)++];
  p.reset(channel);
  return p;
}

void planTreeChannel(const PlanRequest& r, int c, Plan* plan, size_t* used) {
  const int which = c % 2;
  const bool rooted = r.collective != Collective::kAllReduce;
  TreeNeighbors computed;
  const TreeNeighbors* neighbors = !rooted && r.allReduceTrees ? &r.allReduceTrees[which] : nullptr;
  if (!neighbors) {
    computed = rankTreeNeighbors(*r.layout, which, rooted ? r.root : -1, r.rank);
    neighbors = &computed;
  }
  const TreeNeighbors& t = *neighbors;
  Slice s = channelSlice(0, r.count, r.nchannels, c, r.elemSize);
  switch (r.collective) {
    case Collective::kReduce:
      reduceUp(t, s, &newProgram(plan, c, used).steps);
      break;
    case Collective::kBroadcast:
      broadcastDown(t, s, false, &newProgram(plan, c, used).steps);
      break;
    case Collective::kAllReduce:
      if (t.parent < 0) {
        ChannelProgram& p = newProgram(plan, c, used);
        reduceUp(t, s, &p.steps);
        broadcastDown(t, s, true, &p.steps);
      } else {
        reduceUp(t, s, &newProgram(plan, c, used).steps);
        broadcastDown(t, s, false, &newProgram(plan, c, used).steps);
      }
      break;
    default:
      break;
  }
}

// A tree reduce accumulates children in the output, which only the root has.
void treeScratch(const PlanRequest& r, Plan* plan) {
  if (r.collective == Collective::kReduce && r.rank != r.root) plan->scratchBytes = r.count * r.elemSize;
}

}  // namespace tutti
