#include "tests/harness/stop_trial.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <regex>
#include <vector>

namespace tutti_test {

namespace {

// A child stops its parent (the victim) after `ms` and kills it once every
// other rank has had time to report.
void stopMeLater(int ms, int timeoutSeconds) {
  const pid_t victim = getpid();
  if (fork() != 0) return;
  timespec wait{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&wait, nullptr);
  kill(victim, SIGSTOP);
  timespec linger{timeoutSeconds + 4, 0};
  nanosleep(&linger, nullptr);
  kill(victim, SIGKILL);
  _exit(0);
}

}  // namespace

std::string runStopTrialRank(const RankContext& ctx, const StopTrial& trial) {
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  if (ctx.rank == trial.victim) stopMeLater(trial.stopAfterMs, trial.timeoutSeconds);
  std::mt19937_64 sizes(trial.seed);
  std::vector<float> buf(1 << 21, 1.0f);
  auto t0 = std::chrono::steady_clock::now();
  tuttiResult_t r = tuttiSuccess;
  int calls = 0;
  for (; calls < 1000000 && r == tuttiSuccess; ++calls) {
    // Log-uniform from 1 element to 8 MiB.
    size_t count = static_cast<size_t>(std::exp2(static_cast<double>(sizes() % 2100) / 100.0));
    r = tuttiAllReduce(buf.data(), buf.data(), std::min(count, buf.size()), tuttiFloat32, tuttiSum,
                       comm, nullptr);
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string msg = tuttiGetLastError(comm);
  tuttiCommAbort(comm);
  if (r == tuttiSuccess) return "never saw the stop";
  const std::string v = std::to_string(trial.victim);
  const std::regex named("rank " + v + " \\(host [^,]+, pid [0-9]+, stopped\\)|rank " + v +
                         " \\([^)]+\\) is blamed by the ranks that gave up|because rank " + v + " failed");
  if (!std::regex_search(msg, named))
    return "after " + std::to_string(calls) + " calls, does not name the stopped rank " + v + ": " + msg;
  if (s > trial.stopAfterMs / 1000.0 + trial.timeoutSeconds + 3)
    return "took " + std::to_string(s) + " s, much longer than TUTTI_TIMEOUT after the stop";
  return "";
}

std::string stopTrialStory(const std::vector<RankOutcome>& outcomes, const StopTrial& trial) {
  std::string story;
  for (const auto& o : outcomes) {
    if (o.rank == trial.victim) {
      if (o.failure.find("signal 9") == std::string::npos)
        story += "  victim rank " + std::to_string(o.rank) + " was not stopped and killed: " + o.failure + "\n";
    } else if (!o.failure.empty()) {
      story += "  rank " + std::to_string(o.rank) + ": " + o.failure + "\n";
    }
  }
  return story;
}

}  // namespace tutti_test
