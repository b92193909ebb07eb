// Ranks that call different things under one call number: another
// collective, dtype, count, op or root. Every rank must fail with
// tuttiInvalidUsage within a few seconds (long before TUTTI_TIMEOUT), its
// message naming both calls ("rank 2 called tuttiBroadcast(count 1024
// float, root 0) as call #6 while rank 0 called tuttiAllReduce(count 1024
// float, sum)"). A call that blocks is caught by the check a blocked call
// makes after TUTTI_MATCH_CHECK_MS, or at once when a chunk of another size
// arrives; calls that differ and still complete
// (another op) need TUTTI_CHECK_CALLS=1, which every case also runs under.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

constexpr int kRanks = 3;
constexpr int kOdd = 2;  // the rank that calls something else

struct Mismatch {
  const char* name;
  bool blocks;  // caught without TUTTI_CHECK_CALLS
};

// Call #6 on rank `rank`; only rank kOdd's differs from the others'.
tuttiResult_t sixthCall(const std::string& kind, int rank, std::vector<double>& buf, tuttiComm_t comm) {
  const bool odd = rank == kOdd;
  if (kind == "collective" && odd) return tuttiBroadcast(buf.data(), buf.data(), 1024, tuttiFloat32, 0, comm, nullptr);
  if (kind == "dtype" && odd) return tuttiAllReduce(buf.data(), buf.data(), 1024, tuttiFloat64, tuttiSum, comm, nullptr);
  if (kind == "count" && odd) return tuttiAllReduce(buf.data(), buf.data(), 3000, tuttiFloat32, tuttiSum, comm, nullptr);
  if (kind == "op" && odd) return tuttiAllReduce(buf.data(), buf.data(), 1024, tuttiFloat32, tuttiMax, comm, nullptr);
  if (kind == "root") return tuttiBroadcast(buf.data(), buf.data(), 1024, tuttiFloat32, odd ? 1 : 0, comm, nullptr);
  return tuttiAllReduce(buf.data(), buf.data(), 1024, tuttiFloat32, tuttiSum, comm, nullptr);
}

std::string rankBody(const RankContext& ctx, const std::string& kind) {
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  std::vector<double> buf(4096, 1.0);
  for (int i = 0; i < 5; ++i)
    if (tuttiAllReduce(buf.data(), buf.data(), 1024, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
      return std::string("a matching call failed: ") + tuttiGetLastError(comm);
  auto t0 = std::chrono::steady_clock::now();
  tuttiResult_t r = sixthCall(kind, ctx.rank, buf, comm);
  // A rank whose own call completed learns of it at its next call.
  if (r == tuttiSuccess) r = tuttiAllReduce(buf.data(), buf.data(), 1024, tuttiFloat32, tuttiSum, comm, nullptr);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string msg = tuttiGetLastError(comm);
  tuttiCommAbort(comm);
  if (r != tuttiInvalidUsage)
    return "returned " + std::to_string(r) + " after " + std::to_string(s) + " s, not tuttiInvalidUsage: " + msg;
  if (msg.find(" as call #6 while rank ") == std::string::npos)
    return "the message does not name both calls of call #6: " + msg;
  if (s > 8) return "took " + std::to_string(s) + " s";
  return "";
}

void expectCaught(const std::string& kind, bool checkCalls) {
  auto outcomes = runRanks(kRanks, [kind](const RankContext& ctx) { return rankBody(ctx, kind); },
                           [checkCalls](int) {
                             return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"},
                                                                       {"TUTTI_TIMEOUT", "20"},
                                                                       {"TUTTI_CHECK_CALLS", checkCalls ? "1" : "0"}};
                           },
                           60);
  EXPECT_EQ(summarize(outcomes), "") << kind << (checkCalls ? " with TUTTI_CHECK_CALLS=1" : "");
}

class Mismatched : public ::testing::TestWithParam<Mismatch> {};

TEST_P(Mismatched, EveryRankFailsNamingBothCalls) {
  const Mismatch m = GetParam();
  if (m.blocks) expectCaught(m.name, false);
  expectCaught(m.name, true);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Mismatched,
                         ::testing::Values(Mismatch{"collective", true}, Mismatch{"dtype", true},
                                           Mismatch{"count", true}, Mismatch{"root", true},
                                           Mismatch{"op", false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tutti_test
