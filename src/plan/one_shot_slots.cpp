// The kinds of link whose slots one-shot programs cut their data to
// (ChannelProgram::phaseLinks). A connection's slots depend on its kind of
// link, and both ends must cut what crosses it alike: every rank derives the
// kinds from the same layout, never from its own connections alone.
#include "src/plan/layout.h"
#include "src/plan/plan_internal.h"

namespace tutti {

OneShotLink narrowestOneShotLink(const NodeLayout* layout) {
  if (!layout) return OneShotLink::kBoth;
  if (layout->nnodes() == 1) return OneShotLink::kInsideNode;
  return layout->maxRanksPerNode() == 1 ? OneShotLink::kAcrossNodes : OneShotLink::kBoth;
}

void setPhaseLinksNarrowest(const PlanRequest& r, ChannelProgram* program) {
  program->phaseLinks.assign(1, narrowestOneShotLink(r.layout));
}

void setPhaseLinksByPeers(const PlanRequest& r, ChannelProgram* program) {
  if (!r.layout) return setPhaseLinksNarrowest(r, program);
  const std::vector<Step>& steps = program->steps;
  const int node = r.layout->nodeOf(r.rank);
  program->phaseLinks.clear();
  size_t begin = 0;
  for (size_t phase = 0; phase <= program->phaseStarts.size(); ++phase) {
    const size_t end = phase < program->phaseStarts.size() ? program->phaseStarts[phase] : steps.size();
    // Inside the node only if every peer of the phase is (one talking to none: the narrowest).
    bool inside = true, any = false;
    auto take = [&](int peer) {
      any = true;
      inside = inside && r.layout->nodeOf(peer) == node;
    };
    for (size_t i = begin; i < end; ++i) {
      if (steps[i].sendPeer >= 0) take(steps[i].sendPeer);
      forEachRecvPeer(steps[i], r.rank, take);
    }
    program->phaseLinks.push_back(!any ? narrowestOneShotLink(r.layout)
                                  : inside ? OneShotLink::kInsideNode : OneShotLink::kAcrossNodes);
    begin = end;
  }
}

}  // namespace tutti
