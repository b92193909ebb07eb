// A job of many ranks always has one that dies. Trials of 6 ranks running
// all-reduces of random sizes, one random rank killed (SIGKILL) at a random
// moment: every survivor must fail within TUTTI_TIMEOUT naming the killed
// rank, never another survivor that merely gave up first. Over TCP and over
// shared memory. TUTTI_KILL_TRIALS sets the trials per transport (ctest runs
// a few; scripts/kill-trials.sh runs 50 each).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/harness/fault_trial.h"

namespace tutti_test {
namespace {

void runTrials(const std::string& net) {
  const char* env = getenv("TUTTI_KILL_TRIALS");
  const int trials = env ? atoi(env) : 4;
  const int clean = runFaultTrials(Fault::kKill, net, trials);
  std::cout << "kill trials over " << net << ": " << clean << " of " << trials
            << " with every survivor naming the killed rank\n";
}

TEST(KilledRankTrials, EverySurvivorNamesTheKilledRankOverSockets) { runTrials("socket"); }
TEST(KilledRankTrials, EverySurvivorNamesTheKilledRankOverShm) { runTrials("shm"); }

}  // namespace
}  // namespace tutti_test
