// A rank that is alive but stopped (SIGSTOP: a debugger, a swapped-out or
// frozen process) breaks no connection, so every other rank simply times
// out; the rank waited on is usually a healthy neighbour. Trials of 6 ranks
// running all-reduces of random sizes, one random rank stopped at a random
// moment: every other rank's error must name the stopped rank as the one
// that holds the call up, with its host, pid and state, never a healthy
// rank. Over TCP and over shared memory. TUTTI_STOP_TRIALS sets the trials
// per transport (ctest runs 2; TUTTI_STOP_TRIALS=20 runs the 20).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tests/harness/fault_trial.h"
#include "tests/harness/ranks.h"

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

// Stopped before the connections a call first needs are made: the others
// wait in setup, not in a step, and must still name it (its state and the
// call it has not entered), not report only that it never attached.
TEST(StoppedRank, OneStoppedBeforeItsPeersFirstConnectionsIsNamed) {
  constexpr int n = 4, victim = 2;
  const std::string pidFile = "/tmp/tutti-stopped-victim-" + std::to_string(getpid());
  auto body = [&](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    float x = 1, sum = 0;  // the rings, connected at init, work
    if (tuttiAllReduce(&x, &sum, 1, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess || sum != n)
      return std::string("the first all-reduce failed: ") + tuttiGetLastError(comm);
    if (ctx.rank == victim) {
      std::ofstream(pidFile) << getpid() << std::endl;
      raise(SIGSTOP);
      return "";
    }
    // Send and receive with the victim: their connections are made now.
    std::vector<float> out(1000, 1.0f), in(1000);
    tuttiGroupStart();
    tuttiSend(out.data(), out.size(), tuttiFloat32, victim, comm, nullptr);
    tuttiRecv(in.data(), in.size(), tuttiFloat32, victim, comm, nullptr);
    const tuttiResult_t r = tuttiGroupEnd();
    const std::string message = tuttiGetLastError(comm);
    // The victim goes once every other rank is done (one killed sooner is
    // gone, not stopped, to the ranks still asking): the last one kills it.
    const int fd = open((pidFile + ".done").c_str(), O_CREAT | O_RDWR | O_APPEND, 0600);
    flock(fd, LOCK_EX);
    (void)!write(fd, "x", 1);
    const bool last = lseek(fd, 0, SEEK_END) == n - 1;
    flock(fd, LOCK_UN);
    close(fd);
    if (last) {
      int pid = 0;
      std::ifstream(pidFile) >> pid;
      if (pid > 0) kill(pid, SIGKILL);
    }
    if (r == tuttiSuccess) return "the calls with the stopped rank succeeded";
    const std::string named = "rank " + std::to_string(victim) + " (host ";
    if (message.find(named) == std::string::npos || message.find("stopped") == std::string::npos)
      return "does not name the stopped rank " + std::to_string(victim) + ": " + message;
    return "";
  };
  auto env = [](int) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "3"}};
  };
  std::vector<RankOutcome> outcomes = runRanks(n, body, env, 60);
  unlink(pidFile.c_str());
  unlink((pidFile + ".done").c_str());
  std::string failures;
  for (const RankOutcome& o : outcomes)
    if (o.rank != victim && !o.failure.empty()) failures += "rank " + std::to_string(o.rank) + ": " + o.failure + "\n";
  EXPECT_EQ(failures, "");
}

}  // namespace
}  // namespace tutti_test
