// A job of many ranks always has one that dies. Trials of 6 ranks running
// all-reduces of random sizes, one random rank killed (SIGKILL) at a random
// moment: every survivor must fail within TUTTI_TIMEOUT naming the killed
// rank, never another survivor that merely gave up first. Over TCP and over
// shared memory. TUTTI_KILL_TRIALS sets the trials per transport (ctest runs
// a few; scripts/kill-trials.sh runs 50 each).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

constexpr int kRanks = 6;
constexpr int kTimeoutSeconds = 10;

struct Trial {
  int victim;
  int killAfterMs;  // after init returns
  uint64_t seed;    // the sizes of the all-reduces, alike on every rank
};

Trial trialNumber(int t, const std::string& net) {
  std::mt19937_64 rng(1000003ull * t + std::hash<std::string>()(net));
  Trial trial;
  trial.victim = static_cast<int>(rng() % kRanks);
  trial.killAfterMs = 10 + static_cast<int>(rng() % 500);
  trial.seed = rng();
  return trial;
}

std::string survivor(const RankContext& ctx, const Trial& trial) {
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  if (ctx.rank == trial.victim)
    std::thread([ms = trial.killAfterMs] {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      raise(SIGKILL);
    }).detach();
  std::mt19937_64 sizes(trial.seed);
  std::vector<float> buf(1 << 21, 1.0f);
  auto t0 = std::chrono::steady_clock::now();
  tuttiResult_t r = tuttiSuccess;
  int calls = 0;
  for (; calls < 1000000 && r == tuttiSuccess; ++calls) {
    // Log-uniform from 1 element to 8 MiB.
    size_t count = static_cast<size_t>(std::exp2(static_cast<double>(sizes() % 2100) / 100.0));
    r = tuttiAllReduce(buf.data(), buf.data(), std::min(count, buf.size()), tuttiFloat32, tuttiMax,
                       comm, nullptr);
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string msg = tuttiGetLastError(comm);
  tuttiCommAbort(comm);
  const std::string victim = "rank " + std::to_string(trial.victim);
  if (r == tuttiSuccess) return "never saw the failure";
  if (msg.find(victim) == std::string::npos)
    return "after " + std::to_string(calls) + " calls, does not name the killed " + victim + ": " + msg;
  if (s > trial.killAfterMs / 1000.0 + kTimeoutSeconds)
    return "took " + std::to_string(s) + " s, longer than TUTTI_TIMEOUT after the kill";
  return "";
}

void runTrials(const std::string& net) {
  const char* env = getenv("TUTTI_KILL_TRIALS");
  const int trials = env ? atoi(env) : 4;
  int clean = 0;
  for (int t = 0; t < trials; ++t) {
    Trial trial = trialNumber(t, net);
    auto outcomes = runRanks(kRanks, [trial](const RankContext& ctx) { return survivor(ctx, trial); },
                             [net](int) {
                               std::map<std::string, std::string> e{
                                   {"TUTTI_SOCKET_IFNAME", "lo"},
                                   {"TUTTI_TIMEOUT", std::to_string(kTimeoutSeconds)}};
                               if (net == "socket") e["TUTTI_SHM_DISABLE"] = "1";
                               return e;
                             },
                             120);
    std::string story;
    for (const auto& o : outcomes) {
      if (o.rank == trial.victim) {
        if (o.failure.find("signal 9") == std::string::npos)
          story += "  victim rank " + std::to_string(o.rank) + " was not killed: " + o.failure + "\n";
      } else if (!o.failure.empty()) {
        story += "  rank " + std::to_string(o.rank) + ": " + o.failure + "\n";
      }
    }
    if (story.empty()) ++clean;
    EXPECT_EQ(story, "") << net << " trial " << t << ": rank " << trial.victim << " killed "
                         << trial.killAfterMs << " ms after init";
  }
  std::cout << "kill trials over " << net << ": " << clean << " of " << trials
            << " with every survivor naming the killed rank\n";
}

TEST(KilledRankTrials, EverySurvivorNamesTheKilledRankOverSockets) { runTrials("socket"); }
TEST(KilledRankTrials, EverySurvivorNamesTheKilledRankOverShm) { runTrials("shm"); }

}  // namespace
}  // namespace tutti_test
