// A rank that is alive but stopped (SIGSTOP: a debugger, a swapped-out or
// frozen process) breaks no connection, so every other rank simply times
// out; the rank waited on is usually a healthy neighbour. Trials of 6 ranks
// running all-reduces of random sizes, one random rank stopped at a random
// moment: every other rank's error must name the stopped rank as the one
// that holds the call up, with its host, pid and state, never a healthy
// rank. Over TCP and over shared memory. TUTTI_STOP_TRIALS sets the trials
// per transport (ctest runs 2; TUTTI_STOP_TRIALS=20 runs the 20).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/harness/fault_trial.h"

namespace tutti_test {
namespace {

constexpr int kTimeoutSeconds = 4;

void runTrials(const std::string& net) {
  const char* env = getenv("TUTTI_STOP_TRIALS");
  const int trials = env ? atoi(env) : 2;
  const int clean = runFaultTrials(Fault::kStop, net, trials, 6, kTimeoutSeconds);
  std::cout << "stop trials over " << net << ": " << clean << " of " << trials
            << " with every other rank naming the stopped rank\n";
}

TEST(StoppedRankTrials, EveryRankNamesTheStoppedRankOverSockets) { runTrials("socket"); }
TEST(StoppedRankTrials, EveryRankNamesTheStoppedRankOverShm) { runTrials("shm"); }

}  // namespace
}  // namespace tutti_test
