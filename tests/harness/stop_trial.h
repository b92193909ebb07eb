// One rank of a stop trial: all-reduces of random sizes until one rank,
// stopped (SIGSTOP) at a random moment, makes every other rank time out.
// The stopped rank is killed by a child of its own once the others have
// had time to report. Shared by the single-host and the multi-node trials.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {

struct StopTrial {
  int victim;
  int stopAfterMs;  // after init returns
  uint64_t seed;    // the sizes of the all-reduces, alike on every rank
  int timeoutSeconds;
};

// "" when this rank's error names the stopped rank as what holds the call
// up (its own diagnosis, or a notice from a rank that made one) within
// about TUTTI_TIMEOUT of the stop; the victim is killed and never returns.
std::string runStopTrialRank(const RankContext& ctx, const StopTrial& trial);

// "" when the victim was killed (by its child, as planned) and every other
// rank passed; else each failing rank's story.
std::string stopTrialStory(const std::vector<RankOutcome>& outcomes, const StopTrial& trial);

}  // namespace tutti_test
