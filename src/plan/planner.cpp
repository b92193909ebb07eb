#include "src/plan/planner.h"

#include "src/plan/algorithms.h"
#include "src/plan/plan_internal.h"

namespace tutti {

void buildPlan(const PlanRequest& r, Plan* plan) {
  plan->collective = r.collective;
  plan->scratchBytes = 0;
  plan->finalToOutput = false;
  if (r.collective == Collective::kSend || r.collective == Collective::kRecv) {
    plan->algorithm = r.algorithm;
    plan->taggedChunks = false;
    size_t used = 0;
    ChannelProgram& ch = newProgram(plan, kP2PChannel, &used);
    plan->channels.resize(used);
    if (r.collective == Collective::kSend)
      addStep(&ch.steps, StepKind::kSend, -1, r.peer, 0, 0, r.count);
    else
      addStep(&ch.steps, StepKind::kRecv, r.peer, -1, 0, 0, r.count);
    return;
  }
  // Rings serve what the chosen algorithm cannot: one rank, a collective it
  // lacks, no layout for one that follows it.
  const AlgorithmEntry* e = &algorithmEntry(r.algorithm);
  if (r.nranks <= 1 || !e->implements(r.collective) || (e->needsLayout && !r.layout))
    e = &algorithmEntry(Algorithm::kRing);
  PlanRequest req = r;
  req.nchannels = e->oneShotChannel || r.nchannels < 1 ? 1 : r.nchannels;
  plan->algorithm = e->id;
  plan->taggedChunks = e->oneShotChannel;
  size_t used = 0;
  for (int c = 0; c < req.nchannels; ++c) e->planChannel(req, c, plan, &used);
  plan->channels.resize(used);
  for (ChannelProgram& p : plan->channels)
    if (p.channel == kOneShotChannel && p.phaseLinks.empty()) setPhaseLinksNarrowest(req, &p);
  if (e->scratch) e->scratch(req, plan);
}

}  // namespace tutti
