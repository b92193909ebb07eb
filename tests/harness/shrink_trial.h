// Shrink trials: one rank of a job is killed, stopped, or stays alive and
// never calls; the others go on in a communicator without it
// (tuttiCommShrink) and check every collective of the new one element by
// element, on host buffers or on device buffers (tutti's memory calls).
// Shared by the one-host test (tests/errors/shrink_test.cpp) and the
// namespace-node one (tests/multinode/).
#pragma once

#include <string>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {

enum class Victim { kKilled, kStopped, kSilent };
const char* victimLabel(Victim v);

struct ShrinkTrial {
  Victim victim;
  int victimRank;
  int timeoutSeconds;  // the ranks' TUTTI_TIMEOUT
  bool deviceBuffers;  // the shrunk communicator's calls on device buffers
  // Whether the shrunk communicator must hold what one made from scratch
  // holds: only where both choose the same algorithms, and so make the same
  // connections lazily (one host; across nodes each calibrates its choices
  // on measured links). Either way, destroying it must leave the process as
  // it was before the parent's init.
  bool holdsWhatAFreshOneHolds = true;
};

// A child of this process signals it after `ms`: a kill, or a stop and a
// kill once the survivors are done with it.
void signalMeLater(Victim v, int ms, int timeoutSeconds);

// Every collective, dtype and op of `comm` at awkward counts; "" or what was wrong.
std::string checkEveryCall(tuttiComm_t comm, int rank, int nranks, bool deviceBuffers);

// One rank's part: "" when it went on without the victim (the victim
// itself never returns unless silent). Survivors print the time from their
// failed call (or their shrink, for a silent victim) to the first completed
// call of the shrunk communicator.
std::string runShrinkRank(const RankContext& ctx, const ShrinkTrial& trial);

// "" when the victim died by SIGKILL (unless silent) and every survivor passed.
std::string shrinkTrialStory(const std::vector<RankOutcome>& outcomes, const ShrinkTrial& trial);

}  // namespace tutti_test
