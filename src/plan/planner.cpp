#include "src/plan/planner.h"

#include "src/plan/plan_internal.h"

namespace tutti {

bool algorithmSupports(Algorithm algorithm, Collective collective) {
  if (algorithm == Algorithm::kRecursiveDoubling || algorithm == Algorithm::kTwoLevel ||
      algorithm == Algorithm::kHalvingDoubling)
    return collective == Collective::kAllReduce;
  if (algorithm == Algorithm::kRing || algorithm == Algorithm::kOneShot)
    return collective != Collective::kSend && collective != Collective::kRecv;
  return collective == Collective::kAllReduce || collective == Collective::kBroadcast ||
         collective == Collective::kReduce;
}

void buildPlan(const PlanRequest& r, Plan* plan) {
  plan->collective = r.collective;
  plan->algorithm = r.algorithm;
  if (r.collective == Collective::kSend || r.collective == Collective::kRecv) {
    plan->channels.resize(1);
    ChannelProgram& ch = plan->channels[0];
    ch.channel = kP2PChannel;
    ch.steps.clear();
    ch.phaseStarts.clear();
    ch.sendsAhead = false;
    if (r.collective == Collective::kSend)
      addStep(&ch.steps, StepKind::kSend, -1, r.peer, 0, 0, r.count);
    else
      addStep(&ch.steps, StepKind::kRecv, r.peer, -1, 0, 0, r.count);
    return;
  }
  PlanRequest req = r;
  req.nchannels = r.nchannels < 1 ? 1 : r.nchannels;
  if (req.algorithm == Algorithm::kOrdered && req.nranks > 1 && reducesAcrossRanks(req.collective)) {
    size_t used = 0;
    for (int c = 0; c < req.nchannels; ++c) planOrderedChannel(req, c, plan, &used);
    plan->channels.resize(used);
    return;
  }
  if (req.algorithm == Algorithm::kOneShot && req.nranks > 1) {  // kOneShotChannel alone
    req.nchannels = 1;
    size_t used = 0;
    planOneShotChannel(req, 0, plan, &used);
    plan->channels.resize(used);
    return;
  }
  if (onOneShotChannel(req.algorithm) && req.algorithm != Algorithm::kOneShot && req.nranks > 1 &&
      algorithmSupports(req.algorithm, req.collective)) {  // kOneShotChannel alone
    size_t used = 0;
    if (req.algorithm == Algorithm::kRecursiveDoubling) planRecursiveDoublingChannel(req, plan, &used);
    else planTwoLevelChannel(req, plan, &used);
    plan->channels.resize(used);
    return;
  }
  if (req.algorithm == Algorithm::kTree && req.layout && req.nranks > 1 &&
      algorithmSupports(Algorithm::kTree, req.collective)) {
    // Tree programs vary in number per channel; existing ones are reused.
    size_t used = 0;
    for (int c = 0; c < req.nchannels; ++c) planTreeChannel(req, c, plan, &used);
    plan->channels.resize(used);
    return;
  }
  plan->algorithm = Algorithm::kRing;
  plan->channels.resize(req.nchannels);
  for (int c = 0; c < req.nchannels; ++c) {
    plan->channels[c].channel = c;
    plan->channels[c].steps.clear();
    plan->channels[c].phaseStarts.clear();
    plan->channels[c].sendsAhead = false;
    planRingChannel(req, c, &plan->channels[c].steps);
  }
}

}  // namespace tutti
