// Ranks that outnumber their cores: one that waits long on shared memory
// sleeps until its peer moves, rather than polling, so that its polls do not
// take the core from a rank that computes. Both ranks are pinned to one
// core, and rank 0's voluntary context switches are counted while it waits
// on a late rank 1: asleep on its peer, it blocks about once a millisecond
// (its abort check); napping 50 us at a time (the old wait), ten times as
// often.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

constexpr int kLateMs = 600;
constexpr size_t kCount = 2 << 20;  // 8 MiB of floats: past the small-call path, through the executor

long voluntarySwitches() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_nvcsw;
}

// Every rank pinned to one core; rank `late` comes kLateMs late to the
// second of two all-reduces. "" when every other rank slept while it waited
// (at most 2 blocks a millisecond) and every element is right.
std::string lateRankOnOneCore(int nranks, int late, const RankEnv& env) {
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0) return "sched_getaffinity failed";
  int first = 0;
  while (!CPU_ISSET(first, &mine)) ++first;
  auto body = [first, nranks, late](const RankContext& ctx) -> std::string {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) return "could not pin the rank to core " + std::to_string(first);
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    std::vector<float> in(kCount), out(kCount, -1.0f);
    for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>((i * 3 + ctx.rank * 5) % 101);
    // Once to set the connections up; then one rank comes late.
    if (tuttiAllReduce(in.data(), out.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
      return "first all-reduce failed";
    if (ctx.rank == late) usleep(kLateMs * 1000);
    const long before = voluntarySwitches();
    if (tuttiAllReduce(in.data(), out.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
      return "all-reduce failed";
    const long switches = voluntarySwitches() - before;
    tuttiCommDestroy(comm);
    for (size_t i = 0; i < kCount; ++i) {
      float want = 0;
      for (int r = 0; r < nranks; ++r) want += static_cast<float>((i * 3 + r * 5) % 101);
      if (out[i] != want)
        return "element " + std::to_string(i) + " is " + std::to_string(out[i]) + ", not " + std::to_string(want);
    }
    // The others waited kLateMs: about that many sleeps of 1 ms, against
    // thousands of 50-us naps.
    if (ctx.rank != late && switches > 2 * kLateMs)
      return "rank " + std::to_string(ctx.rank) + " blocked " + std::to_string(switches) + " times while it waited " +
             std::to_string(kLateMs) + " ms for rank " + std::to_string(late) +
             ": it polls rather than sleeping on its peer";
    return "";
  };
  return summarize(runRanks(nranks, body, env));
}

TEST(Waiting, RankSharingItsCoreSleepsOnALatePeer) { EXPECT_EQ(lateRankOnOneCore(2, 1, nullptr), ""); }

// Two nodes on one kernel (as namespaces or containers are): a rank whose
// program mixes sockets (across) and shared memory (inside its node) sleeps
// too while it waits on its host-mate, once its sockets have sent all; with
// two channels, one waiting on a socket and the other on shared memory, it
// sleeps in poll() on the socket and its doorbell, which the host-mate rings.
std::map<std::string, std::string> twoNodes(int rank, const char* algorithm, const char* channels) {
  // The late call's time is not one to keep for the next run.
  std::map<std::string, std::string> env{{"TUTTI_HOSTID", "node" + std::to_string(rank / 2)},
                                         {"TUTTI_KEEP_CALL_TIMES", "0"}};
  if (*algorithm) env["TUTTI_ALGO"] = algorithm;
  if (*channels) env["TUTTI_NCHANNELS"] = channels;
  return env;
}

TEST(Waiting, RanksOfTwoNodesSharingACoreSleepOnALateHostMate) {
  EXPECT_EQ(lateRankOnOneCore(4, 3, [](int rank) { return twoNodes(rank, "", ""); }), "");
}

TEST(Waiting, ChannelsWaitingOnASocketAndOnSharedMemorySleepTogether) {
  for (const char* algorithm : {"ring", "tree", "twolevel"}) {
    SCOPED_TRACE(algorithm);
    EXPECT_EQ(lateRankOnOneCore(4, 3, [algorithm](int rank) { return twoNodes(rank, algorithm, "2"); }), "");
  }
}

}  // namespace
}  // namespace tutti_test
