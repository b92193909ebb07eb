// Faults on a mixed device communicator: four ranks as two pretend nodes
// (TUTTI_HOSTID), device buffers of the emulated device (TUTTI_EMULATE_DEVICE),
// so P2P inside each node and sockets with mapped slots between them. A rank
// killed mid-stream, an abort from another thread, a peer that never comes:
// every survivor's stream completes (its gate opens), the failure becomes
// the async error naming the culprit, within TUTTI_TIMEOUT.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

constexpr int kRanks = 4;
constexpr int kTimeoutSeconds = 5;

// TUTTI_TEST_REAL_GPU=1 (scripts/gpu-check.sh) runs the same faults on the
// GPU the process sees instead of the emulated device.
RankEnv twoNodes(int timeoutSeconds = kTimeoutSeconds) {
  const bool realGpu = getenv("TUTTI_TEST_REAL_GPU") && std::string(getenv("TUTTI_TEST_REAL_GPU")) == "1";
  return [timeoutSeconds, realGpu](int rank) {
    std::map<std::string, std::string> env{{"TUTTI_SOCKET_IFNAME", "lo"},
                                           {"TUTTI_TIMEOUT", std::to_string(timeoutSeconds)},
                                           {"TUTTI_P2P_BUFFSIZE", "1048576"},
                                           {"TUTTI_HOSTID", "node" + std::to_string(rank / 2)},
                                           // Rings: the faults strike calls over connections init
                                           // made (a tree's would be made by the first call, with
                                           // peers that may never come).
                                           {"TUTTI_ALGO", "ring"}};
    if (!realGpu) env["TUTTI_EMULATE_DEVICE"] = "1";
    return env;
  };
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct DeviceBuffer {
  void* p = nullptr;
  void* stream = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    tuttiMemAlloc(&p, bytes);
    tuttiStreamCreate(&stream);
  }
  ~DeviceBuffer() {
    tuttiMemFree(p);
    tuttiStreamDestroy(stream);
  }
};

// As NCCL programs do, the device is used (a context made) before the
// communicator, which then connects its device rings at init: the faults
// below strike calls, not the first call's connection setup.
std::string initAfterUsingTheDevice(const RankContext& ctx, tuttiComm_t* comm) {
  void* p = nullptr;
  if (tuttiMemAlloc(&p, 4096) != tuttiSuccess) return "tuttiMemAlloc before init failed";
  tuttiMemFree(p);
  return initComm(ctx, comm);
}

// Device all-reduces until one fails; each is waited for on the stream.
// "" when the failure came as the async error naming `culprit` in time.
std::string untilFailure(tuttiComm_t comm, const std::string& culprit, double limitSeconds) {
  const size_t count = 1 << 20;
  DeviceBuffer buf(count * 4);
  auto t0 = std::chrono::steady_clock::now();
  tuttiResult_t r = tuttiSuccess, async = tuttiSuccess;
  for (int i = 0; i < 100000 && r == tuttiSuccess && async == tuttiSuccess; ++i) {
    r = tuttiAllReduce(buf.p, buf.p, count, tuttiFloat32, tuttiMax, comm, buf.stream);
    if (tuttiStreamSynchronize(buf.stream) != tuttiSuccess) return "the stream failed";
    tuttiCommGetAsyncError(comm, &async);
  }
  const double s = secondsSince(t0);
  const std::string msg = tuttiGetLastError(comm);
  if (r == tuttiSuccess && async == tuttiSuccess) return "never saw the failure";
  if (async == tuttiSuccess) return "the call failed (" + msg + ") but no async error was set";
  if (msg.find(culprit) == std::string::npos) return "the error does not name " + culprit + ": " + msg;
  if (s > limitSeconds) return "took " + std::to_string(s) + " s";
  return "";
}

class KilledOnDevice : public ::testing::TestWithParam<int> {};

// Rank 1 shares node 0 with rank 0 (P2P); rank 2 is across the network.
TEST_P(KilledOnDevice, SurvivorsStreamsCompleteNamingTheKilledRank) {
  const int victim = GetParam();
  auto body = [victim](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initAfterUsingTheDevice(ctx, &comm);
    if (!err.empty()) return err;
    if (ctx.rank == victim)
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        raise(SIGKILL);
      }).detach();
    err = untilFailure(comm, "rank " + std::to_string(victim), 0.4 + kTimeoutSeconds + 5);
    tuttiCommAbort(comm);
    return err;
  };
  auto outcomes = runRanks(kRanks, body, twoNodes(), 120);
  for (const auto& o : outcomes) {
    if (o.rank == victim) EXPECT_NE(o.failure.find("signal 9"), std::string::npos) << o.failure;
    else EXPECT_EQ(o.failure, "") << "rank " << o.rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Victims, KilledOnDevice, ::testing::Values(1, 2),
                         [](const auto& info) { return info.param == 1 ? "p2p_peer" : "network_peer"; });

// Ranks 0..2 call; rank 3 never does: each stream completes within the
// timeout and the error names a rank that is behind.
TEST(DeviceFaults, APeerThatNeverCallsTimesOutAndOpensTheGate) {
  auto body = [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initAfterUsingTheDevice(ctx, &comm);
    if (!err.empty()) return err;
    if (ctx.rank == kRanks - 1) {
      std::this_thread::sleep_for(std::chrono::seconds(kTimeoutSeconds + 8));
      tuttiCommAbort(comm);
      return "";
    }
    err = untilFailure(comm, "rank ", kTimeoutSeconds + 5);
    tuttiCommAbort(comm);
    return err;
  };
  EXPECT_EQ(summarize(runRanks(kRanks, body, twoNodes(), 120)), "");
}

// Rank 0's call waits on peers that never come; another thread aborts the
// communicator: the stream completes at once, not after the timeout. The
// timeout is long (kAbortTimeout) so that a loaded machine's slowness and
// a gate that only the timeout opens lie far apart.
TEST(DeviceFaults, AbortFromAnotherThreadOpensTheGate) {
  constexpr int kAbortTimeout = 60;
  auto body = [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initAfterUsingTheDevice(ctx, &comm);
    if (!err.empty()) return err;
    if (ctx.rank != 0) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      tuttiCommAbort(comm);
      return "";
    }
    DeviceBuffer buf(1 << 20);
    if (tuttiAllReduce(buf.p, buf.p, 1 << 18, tuttiFloat32, tuttiSum, comm, buf.stream) != tuttiSuccess)
      return std::string("enqueue: ") + tuttiGetLastError(comm);
    auto t0 = std::chrono::steady_clock::now();
    std::thread aborter([comm] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      tuttiCommAbort(comm);
    });
    tuttiResult_t r = tuttiStreamSynchronize(buf.stream);
    const double s = secondsSince(t0);
    aborter.join();
    if (r != tuttiSuccess) return "synchronize failed";
    if (s > kAbortTimeout / 4) return "the stream completed " + std::to_string(s) + " s after the call, the abort at 0.3 s";
    return "";
  };
  EXPECT_EQ(summarize(runRanks(kRanks, body, twoNodes(kAbortTimeout), 120)), "");
}

}  // namespace
}  // namespace tutti_test
