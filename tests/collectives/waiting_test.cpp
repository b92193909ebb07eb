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

TEST(Waiting, RankSharingItsCoreSleepsOnALatePeer) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  int first = 0;
  while (!CPU_ISSET(first, &mine)) ++first;
  auto body = [first](const RankContext& ctx) -> std::string {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) return "could not pin the rank to core " + std::to_string(first);
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    std::vector<float> in(kCount), out(kCount, -1.0f);
    for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>((i * 3 + ctx.rank * 5) % 101);
    // Once to set the connections up; then rank 1 comes late.
    if (tuttiAllReduce(in.data(), out.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
      return "first all-reduce failed";
    if (ctx.rank == 1) usleep(kLateMs * 1000);
    const long before = voluntarySwitches();
    if (tuttiAllReduce(in.data(), out.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
      return "all-reduce failed";
    const long switches = voluntarySwitches() - before;
    tuttiCommDestroy(comm);
    for (size_t i = 0; i < kCount; ++i) {
      const float want = static_cast<float>((i * 3) % 101 + (i * 3 + 5) % 101);
      if (out[i] != want)
        return "element " + std::to_string(i) + " is " + std::to_string(out[i]) + ", not " + std::to_string(want);
    }
    // Rank 0 waited kLateMs: about that many sleeps of 1 ms, against
    // thousands of 50-us naps.
    if (ctx.rank == 0 && switches > 2 * kLateMs)
      return "rank 0 blocked " + std::to_string(switches) + " times while it waited " + std::to_string(kLateMs) +
             " ms for rank 1: it polls rather than sleeping on its peer";
    return "";
  };
  EXPECT_EQ(summarize(runRanks(2, body)), "");
}

}  // namespace
}  // namespace tutti_test
