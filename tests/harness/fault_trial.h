// Fault trials: 6 ranks (or the caller's) run all-reduces of random sizes
// until one rank is killed (SIGKILL) or stopped (SIGSTOP) at a random
// moment. Every other rank must fail within about TUTTI_TIMEOUT, its error
// naming that rank as the cause, never a healthy rank that merely gave up
// first. A child of the victim delivers the signal (and kills a stopped
// victim once the others have reported). Shared by the single-host kill and
// stop trials and the multi-node one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {

enum class Fault { kKill, kStop };

struct FaultTrial {
  Fault fault;
  int victim;
  int afterMs;    // after init returns
  uint64_t seed;  // the sizes of the all-reduces, alike on every rank
  int timeoutSeconds;
};

// Trial `t` of a series over `net` ("socket" or "shm"), for `nranks` ranks.
FaultTrial faultTrialNumber(Fault fault, int t, const std::string& net, int nranks, int timeoutSeconds);

// One rank's part: "" when its error names the victim as the cause in time.
// The victim never returns.
std::string runFaultTrialRank(const RankContext& ctx, const FaultTrial& trial);

// "" when the victim was killed (by its child, as planned) and every other
// rank passed; else each failing rank's story.
std::string faultTrialStory(const std::vector<RankOutcome>& outcomes, const FaultTrial& trial);

// Runs `trials` trials over `net` on this host (loopback; "socket" disables
// shared memory); returns how many were clean, failing the test for each
// that was not.
int runFaultTrials(Fault fault, const std::string& net, int trials, int nranks = 6, int timeoutSeconds = 10);

}  // namespace tutti_test
