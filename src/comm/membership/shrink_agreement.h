// How the survivors of a communicator agree on the one they form
// (tuttiCommShrink) without the excluded ranks, which may be dead: the
// lowest surviving rank hosts the new communicator's rendezvous and tells
// each survivor its handle, over the parent's out-of-band channel, point to
// point (an allgather would pass through the excluded ranks).
#pragma once

#include <functional>
#include <set>

#include "src/bootstrap/exchange.h"
#include "src/bootstrap/unique_id.h"

namespace tutti {

struct NewMembership {
  int nranks = 0;
  int rank = -1;  // this rank's number in the new communicator
  BootstrapHandle handle{};
};

// Every survivor passes the same `excluded` (ranks of `parent`) and
// `round` (how many shrinks the parent has made, so two never mix); the
// leader runs `makeRendezvous`. A survivor whose list differs from the
// leader's fails, naming both lists.
Result<NewMembership> agreeOnSurvivors(Exchange& parent, const std::set<int>& excluded, int round,
                                       const std::function<Result<BootstrapHandle>()>& makeRendezvous);

}  // namespace tutti
