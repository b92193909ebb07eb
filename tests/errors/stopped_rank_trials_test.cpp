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
#include <random>
#include <string>

#include "tests/harness/stop_trial.h"

namespace tutti_test {
namespace {

constexpr int kRanks = 6;
constexpr int kTimeoutSeconds = 4;

StopTrial trialNumber(int t, const std::string& net) {
  std::mt19937_64 rng(7000003ull * t + std::hash<std::string>()(net));
  StopTrial trial;
  trial.victim = static_cast<int>(rng() % kRanks);
  trial.stopAfterMs = 10 + static_cast<int>(rng() % 500);
  trial.seed = rng();
  trial.timeoutSeconds = kTimeoutSeconds;
  return trial;
}

void runTrials(const std::string& net) {
  const char* env = getenv("TUTTI_STOP_TRIALS");
  const int trials = env ? atoi(env) : 2;
  int clean = 0;
  for (int t = 0; t < trials; ++t) {
    StopTrial trial = trialNumber(t, net);
    auto outcomes = runRanks(kRanks, [trial](const RankContext& ctx) { return runStopTrialRank(ctx, trial); },
                             [net](int) {
                               std::map<std::string, std::string> e{
                                   {"TUTTI_SOCKET_IFNAME", "lo"},
                                   {"TUTTI_TIMEOUT", std::to_string(kTimeoutSeconds)}};
                               if (net == "socket") e["TUTTI_SHM_DISABLE"] = "1";
                               return e;
                             },
                             120);
    std::string story = stopTrialStory(outcomes, trial);
    if (story.empty()) ++clean;
    EXPECT_EQ(story, "") << net << " trial " << t << ": rank " << trial.victim << " stopped "
                         << trial.stopAfterMs << " ms after init";
  }
  std::cout << "stop trials over " << net << ": " << clean << " of " << trials
            << " with every other rank naming the stopped rank\n";
}

TEST(StoppedRankTrials, EveryRankNamesTheStoppedRankOverSockets) { runTrials("socket"); }
TEST(StoppedRankTrials, EveryRankNamesTheStoppedRankOverShm) { runTrials("shm"); }

}  // namespace
}  // namespace tutti_test
