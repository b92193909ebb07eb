#include "tests/harness/fault_trial.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <regex>

namespace tutti_test {

namespace {

// A child signals its parent (the victim) after `ms`; a stopped victim is
// killed once every other rank has had time to report.
void faultMeLater(Fault fault, int ms, int timeoutSeconds) {
  const pid_t victim = getpid();
  if (fork() != 0) return;
  timespec wait{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&wait, nullptr);
  if (fault == Fault::kStop) {
    kill(victim, SIGSTOP);
    timespec linger{timeoutSeconds + 4, 0};
    nanosleep(&linger, nullptr);
  }
  kill(victim, SIGKILL);
  _exit(0);
}

// Whether `msg` names the victim as the cause: a dead rank by its number;
// a stopped one by its state, by the verdict of the rank that found it, or
// by the notice of a rank that gave up on it.
bool namesVictim(const std::string& msg, const FaultTrial& trial) {
  const std::string v = std::to_string(trial.victim);
  if (trial.fault == Fault::kKill) return msg.find("rank " + v) != std::string::npos;
  const std::regex named("rank " + v + " \\(host [^,]+, pid [0-9]+, stopped\\)|rank " + v +
                         " \\([^)]+\\) is blamed by the ranks that gave up|because rank " + v + " failed");
  return std::regex_search(msg, named);
}

}  // namespace

FaultTrial faultTrialNumber(Fault fault, int t, const std::string& net, int nranks, int timeoutSeconds) {
  std::mt19937_64 rng((fault == Fault::kKill ? 1000003ull : 7000003ull) * t + std::hash<std::string>()(net));
  FaultTrial trial;
  trial.fault = fault;
  trial.victim = static_cast<int>(rng() % nranks);
  trial.afterMs = 10 + static_cast<int>(rng() % 500);
  trial.seed = rng();
  trial.timeoutSeconds = timeoutSeconds;
  return trial;
}

std::string runFaultTrialRank(const RankContext& ctx, const FaultTrial& trial) {
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  if (ctx.rank == trial.victim) faultMeLater(trial.fault, trial.afterMs, trial.timeoutSeconds);
  std::mt19937_64 sizes(trial.seed);
  std::vector<float> buf(1 << 21, 1.0f);
  auto t0 = std::chrono::steady_clock::now();
  tuttiResult_t r = tuttiSuccess;
  int calls = 0;
  for (; calls < 1000000 && r == tuttiSuccess; ++calls) {
    // Log-uniform from 1 element to 8 MiB.
    size_t count = static_cast<size_t>(std::exp2(static_cast<double>(sizes() % 2100) / 100.0));
    r = tuttiAllReduce(buf.data(), buf.data(), std::min(count, buf.size()), tuttiFloat32, tuttiMax, comm, nullptr);
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string msg = tuttiGetLastError(comm);
  tuttiCommAbort(comm);
  const std::string what = trial.fault == Fault::kKill ? "killed" : "stopped";
  if (r == tuttiSuccess) return "never saw the " + what + " rank";
  if (!namesVictim(msg, trial))
    return "after " + std::to_string(calls) + " calls, does not name the " + what + " rank " +
           std::to_string(trial.victim) + ": " + msg;
  // A kill is seen on connections; a stop only at the timeout, plus the asking.
  const double slack = trial.fault == Fault::kKill ? 0 : 3;
  if (s > trial.afterMs / 1000.0 + trial.timeoutSeconds + slack)
    return "took " + std::to_string(s) + " s, longer than TUTTI_TIMEOUT after the fault";
  return "";
}

std::string faultTrialStory(const std::vector<RankOutcome>& outcomes, const FaultTrial& trial) {
  std::string story;
  for (const auto& o : outcomes) {
    if (o.rank == trial.victim) {
      if (o.failure.find("signal 9") == std::string::npos)
        story += "  victim rank " + std::to_string(o.rank) + " was not killed: " + o.failure + "\n";
    } else if (!o.failure.empty()) {
      story += "  rank " + std::to_string(o.rank) + ": " + o.failure + "\n";
    }
  }
  return story;
}

int runFaultTrials(Fault fault, const std::string& net, int trials, int nranks, int timeoutSeconds) {
  int clean = 0;
  for (int t = 0; t < trials; ++t) {
    FaultTrial trial = faultTrialNumber(fault, t, net, nranks, timeoutSeconds);
    auto outcomes = runRanks(nranks, [trial](const RankContext& ctx) { return runFaultTrialRank(ctx, trial); },
                             [net, timeoutSeconds](int) {
                               std::map<std::string, std::string> e{
                                   {"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", std::to_string(timeoutSeconds)}};
                               if (net == "socket") e["TUTTI_SHM_DISABLE"] = "1";
                               return e;
                             },
                             120);
    const std::string story = faultTrialStory(outcomes, trial);
    if (story.empty()) ++clean;
    EXPECT_EQ(story, "") << net << " trial " << t << ": rank " << trial.victim << " hit "
                         << trial.afterMs << " ms after init";
  }
  return clean;
}

}  // namespace tutti_test
