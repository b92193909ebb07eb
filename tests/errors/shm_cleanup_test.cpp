// Shared-memory segments never outlive their connection setup: a setup that
// times out removes its segment before the call returns, and the segments of
// a rank killed mid-setup are removed by the next communicator on the host.
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

// /dev/shm entries tutti made in process `pid` (of this pid namespace).
// The connection segments of process `pid` (not the communicator's progress
// record, id 4294967295, which lives as long as the communicator).
std::vector<std::string> segmentsOf(pid_t pid) {
  std::vector<std::string> found;
  const std::string mark = "-" + std::to_string(pid) + "-";
  const std::string progress = "-4294967295";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      const bool isProgress = name.size() > progress.size() &&
                              name.compare(name.size() - progress.size(), progress.size(), progress) == 0;
      if (name.rfind("tutti-", 0) == 0 && name.find(mark) != std::string::npos && !isProgress) found.push_back(name);
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

TEST(ShmCleanup, KilledRanksSegmentsAreRemovedByTheNextCommunicator) {
  const std::string pidFile = "/tmp/tutti-shm-cleanup-" + std::to_string(getpid());
  // Rank 1 dies in the middle of its setup, its segment made and not yet
  // opened by rank 0, which has not called.
  runRanks(2, [pidFile](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    if (ctx.rank == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(4));
      tuttiCommAbort(comm);
      return "";
    }
    std::ofstream(pidFile) << getpid();
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      raise(SIGKILL);
    }).detach();
    std::vector<float> buf(1 << 20);
    tuttiRecv(buf.data(), buf.size(), tuttiFloat32, 0, comm, nullptr);
    return "";
  }, shmEnv, 60);
  pid_t dead = 0;
  std::ifstream(pidFile) >> dead;
  std::remove(pidFile.c_str());
  ASSERT_GT(dead, 0) << "rank 1 never started";
  ASSERT_FALSE(segmentsOf(dead).empty()) << "rank 1 was killed before it made a segment";
  // The next job on the host.
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
