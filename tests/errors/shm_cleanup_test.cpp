// Nothing of tutti's outlives the need for it in /dev/shm: a name goes once
// every rank that needs it has it mapped, a setup that times out removes its
// segment before the call returns, the names of a rank killed mid-setup are
// removed by a surviving host-mate's abort or destroy, else by the next
// communicator on the host.
// Segment names carry their creator's pid namespace and pid, which is how
// these tests find them.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

// /dev/shm entries tutti made in process `pid` (of this pid namespace):
// connection segments, the small-call block and the progress record.
std::vector<std::string> segmentsOf(pid_t pid) {
  std::vector<std::string> found;
  const std::string mark = "-" + std::to_string(pid) + "-";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("tutti-", 0) == 0 && name.find(mark) != std::string::npos) found.push_back(name);
    }
    closedir(d);
  }
  return found;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::map<std::string, std::string> shmEnv(int) {
  return {{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "3"}};
}

// Every name goes once every rank that needs it has it mapped: after init
// a communicator in use has none in /dev/shm, its progress record included
// (host-mates keep it mapped to answer for a stopped rank).
TEST(ShmCleanup, ACommunicatorInUseHasNoNameInDevShm) {
  auto outcomes = runRanks(3, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    std::vector<float> x(1 << 16, static_cast<float>(ctx.rank + 1));
    tuttiResult_t r = tuttiAllReduce(x.data(), x.data(), x.size(), tuttiFloat32, tuttiSum, comm, nullptr);
    auto left = segmentsOf(getpid());
    tuttiBarrier(comm, nullptr);  // no rank destroys while another looks
    tuttiCommDestroy(comm);
    if (r != tuttiSuccess || x[0] != 6.0f || x.back() != 6.0f) return "the all-reduce failed";
    if (!left.empty()) return "names in /dev/shm while the communicator is in use: " + joined(left);
    return "";
  }, shmEnv, 60);
  EXPECT_EQ(summarize(outcomes), "");
}

// A rank killed after init leaves nothing: with no other communicator made
// since, the survivors' /dev/shm holds no name of the dead process.
TEST(ShmCleanup, ARankKilledAfterInitLeavesNothing) {
  const std::string pidFile = "/tmp/tutti-shm-killed-" + std::to_string(getpid());
  auto outcomes = runRanks(3, [pidFile](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    float x = 1.0f;
    if (tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess) return "first all-reduce";
    if (ctx.rank == 2) {
      std::ofstream(pidFile) << getpid();
      raise(SIGKILL);
    }
    tuttiResult_t r = tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, comm, nullptr);
    tuttiCommAbort(comm);
    return r == tuttiSuccess ? "an all-reduce with a dead rank succeeded" : "";
  }, [](int) -> std::map<std::string, std::string> {
    return {{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "10"}};
  }, 60);
  pid_t dead = 0;
  std::ifstream(pidFile) >> dead;
  std::remove(pidFile.c_str());
  ASSERT_GT(dead, 0) << "rank 2 never got to its kill";
  EXPECT_EQ(joined(segmentsOf(dead)), "");
  for (const RankOutcome& o : outcomes) {
    if (o.rank == 2) continue;
    EXPECT_EQ(o.failure, "") << "rank " << o.rank;
  }
}

TEST(ShmCleanup, TimedOutSetupLeavesNoSegment) {
  auto outcomes = runRanks(2, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    if (ctx.rank == 0) {  // never sends: rank 1's setup times out
      std::this_thread::sleep_for(std::chrono::seconds(6));
      tuttiCommAbort(comm);
      return "";
    }
    std::vector<float> buf(1 << 20);
    tuttiResult_t r = tuttiRecv(buf.data(), buf.size(), tuttiFloat32, 0, comm, nullptr);
    std::string msg = tuttiGetLastError(comm);
    auto left = segmentsOf(getpid());
    tuttiCommAbort(comm);
    if (r == tuttiSuccess) return "received from a rank that never sent";
    if (!left.empty()) return "after \"" + msg + "\" these segments remain: " + joined(left);
    return "";
  }, shmEnv, 60);
  EXPECT_EQ(summarize(outcomes), "");
}

// Rank 1 of a 2-rank job dies in the middle of its setup, its segment made
// and not yet opened by rank 0; then rank 0 aborts (`survivorAborts`) or is
// killed too. Returns rank 1's pid, or 0 when the scenario did not happen.
pid_t killMidSetup(bool survivorAborts) {
  const std::string pidFile = "/tmp/tutti-shm-cleanup-" + std::to_string(getpid());
  runRanks(2, [pidFile, survivorAborts](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    if (ctx.rank == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(4));
      if (!survivorAborts) raise(SIGKILL);
      tuttiCommAbort(comm);
      return "";
    }
    std::thread([pidFile] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      // Only once a segment is there: the kill must come mid-setup.
      if (!segmentsOf(getpid()).empty()) std::ofstream(pidFile) << getpid();
      raise(SIGKILL);
    }).detach();
    std::vector<float> buf(1 << 20);
    tuttiRecv(buf.data(), buf.size(), tuttiFloat32, 0, comm, nullptr);
    return "";
  }, shmEnv, 60);
  pid_t dead = 0;
  std::ifstream(pidFile) >> dead;
  std::remove(pidFile.c_str());
  return dead;
}

TEST(ShmCleanup, ARankKilledMidSetupLeavesNothingOnceASurvivorAborts) {
  const pid_t dead = killMidSetup(true);
  ASSERT_GT(dead, 0) << "rank 1 was killed before it made a segment, or never";
  EXPECT_EQ(joined(segmentsOf(dead)), "");
}

// When no rank of the job survives, the next job on the host removes them.
TEST(ShmCleanup, KilledRanksSegmentsAreRemovedByTheNextCommunicator) {
  const pid_t dead = killMidSetup(false);
  ASSERT_GT(dead, 0) << "rank 1 was killed before it made a segment, or never";
  ASSERT_FALSE(segmentsOf(dead).empty()) << "nothing left to remove: the test shows nothing";
  auto outcomes = runRanks(2, [dead](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    float x = static_cast<float>(ctx.rank + 1);
    tuttiResult_t r = tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, comm, nullptr);
    tuttiCommDestroy(comm);
    if (r != tuttiSuccess || x != 3.0f) return "the next job's all-reduce failed";
    auto left = segmentsOf(dead);
    if (!left.empty()) return "the killed rank's segments remain: " + joined(left);
    return "";
  }, shmEnv, 60);
  EXPECT_EQ(summarize(outcomes), "");
}

}  // namespace
}  // namespace tutti_test
