// Small calls on the host block (src/comm/small_calls/small_calls.h): many back-to-back
// calls of every kind, roots, dtypes, counts up to a full slot, in place and
// not, with ranks made to lag now and then so writers wait for readers and
// sleepers are woken. Every element of every call is checked against a sum
// the test computes itself. Ranks of one host, 2 to 64: the cost model's
// one-shot (at 64 ranks the slots are 16 KiB, so the 32 KiB calls take rings).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

constexpr int kCalls = 600;
// 16384 x 4 bytes: a whole slot of up to 16 ranks (hostBlockShape); 8192, of up to 32.
const size_t kCounts[] = {1, 2, 7, 33, 1000, 4095, 8192, 16384};

// Rank r's element i of call k: small integers, exact in every dtype used.
int64_t value(int r, int k, size_t i) { return (r * 7 + k * 3 + static_cast<int64_t>(i) * 5) % 61 - 30; }

template <class T>
std::string check(const std::vector<T>& got, size_t offset, size_t count, const std::vector<T>& want,
                  const std::string& what) {
  for (size_t i = 0; i < count; ++i)
    if (got[offset + i] != want[i])
      return what + ": element " + std::to_string(i) + " is " + std::to_string(got[offset + i]) + ", not " +
             std::to_string(want[i]);
  return "";
}

template <class T>
std::string oneCall(tuttiComm_t comm, tuttiDataType_t dtype, int n, int me, int k) {
  const size_t count = kCounts[k % std::size(kCounts)] / (sizeof(T) / 4 + (k % 5 == 4 ? n - 1 : 0));  // reduce-scatter: n blocks
  const int root = k % n;
  const bool inPlace = k % 3 == 0;
  const int kind = k % 5;
  const std::string what = "call " + std::to_string(k) + " kind " + std::to_string(kind) + " count " +
                           std::to_string(count) + (inPlace ? " in place" : "");
  const size_t inCount = kind == 4 ? count * n : count, outCount = kind == 3 ? count * n : count;
  std::vector<T> in(inCount), out(std::max(inCount, outCount), T(-99));
  for (size_t i = 0; i < inCount; ++i) in[i] = static_cast<T>(value(me, k, i));
  std::vector<T> want(outCount);
  tuttiResult_t r = tuttiSuccess;
  auto sumOf = [&](size_t first) {
    for (size_t i = 0; i < count; ++i) {
      int64_t s = 0;
      for (int p = 0; p < n; ++p) s += value(p, k, first + i);
      want[i] = static_cast<T>(s);
    }
  };
  switch (kind) {
    case 0:  // all-reduce
      sumOf(0);
      if (inPlace) out = in;
      r = tuttiAllReduce(inPlace ? out.data() : in.data(), out.data(), count, dtype, tuttiSum, comm, nullptr);
      break;
    case 1:  // broadcast
      for (size_t i = 0; i < count; ++i) want[i] = static_cast<T>(value(root, k, i));
      if (inPlace) out = in;
      r = tuttiBroadcast(inPlace ? out.data() : in.data(), out.data(), count, dtype, root, comm, nullptr);
      break;
    case 2:  // reduce
      sumOf(0);
      if (inPlace) out = in;
      r = tuttiReduce(inPlace ? out.data() : in.data(), out.data(), count, dtype, tuttiSum, root, comm, nullptr);
      if (me != root) want = std::vector<T>(out.begin(), out.begin() + count);  // untouched or ignored
      break;
    case 3:  // all-gather
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < count; ++i) want[p * count + i] = static_cast<T>(value(p, k, i));
      if (inPlace) std::copy(in.begin(), in.end(), out.begin() + me * count);
      r = tuttiAllGather(inPlace ? out.data() + me * count : in.data(), out.data(), count, dtype, comm, nullptr);
      break;
    case 4:  // reduce-scatter
      sumOf(me * count);
      if (inPlace) out = in;
      r = tuttiReduceScatter(inPlace ? out.data() : in.data(), inPlace ? out.data() + me * count : out.data(), count,
                             dtype, tuttiSum, comm, nullptr);
      if (inPlace) std::copy(out.begin() + me * count, out.begin() + (me + 1) * count, out.begin());
      break;
  }
  if (r != tuttiSuccess) return what + " failed: " + tuttiGetLastError(comm);
  if (kind == 2 && me != root) return "";
  return check(out, 0, outCount, want, what);
}

// Where each rank's INFO log goes (TUTTI_DEBUG_FILE, %p: the rank's pid).
const char kLogPattern[] = "/tmp/tutti-small-calls-test.%p.log";

// The calls below must run on the host block, not on some other path that
// would pass them too: init says so in the rank's INFO log.
std::string blockInUse() {
  const std::string path = "/tmp/tutti-small-calls-test." + std::to_string(getpid()) + ".log";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  if (text.str().find("and the host block") == std::string::npos)
    return "init did not make the host block; its log:\n" + text.str();
  return "";
}

// One root's broadcasts back to back with no barrier between, more than
// the deepest ring (256) holds, chunks inline and in the slots' data mixed
// (up to 16 ranks the headers run deeper than the data): the root runs ahead until
// a lagging reader holds it back, then must reuse no slot still unread.
std::string broadcastStream(tuttiComm_t comm, int n, int me) {
  constexpr int kStreamCalls = 1000;
  std::vector<float> buf(1000);
  for (int k = 0; k < kStreamCalls; ++k) {
    const size_t count = k % 2 == 0 ? 100 : 5;  // 400 bytes lie in the data; 20 inline
    for (size_t i = 0; i < count; ++i) buf[i] = me == 0 ? static_cast<float>(value(0, k, i)) : -99.0f;
    if (k % 211 == 17 * me) usleep(2000);
    if (tuttiBroadcast(buf.data(), buf.data(), count, tuttiFloat32, 0, comm, nullptr) != tuttiSuccess)
      return "broadcast " + std::to_string(k) + " failed: " + tuttiGetLastError(comm);
    std::vector<float> want(count);
    for (size_t i = 0; i < count; ++i) want[i] = static_cast<float>(value(0, k, i));
    std::string err = check(buf, 0, count, want, "streamed broadcast " + std::to_string(k) + " of " + std::to_string(n));
    if (!err.empty()) return err;
  }
  return "";
}

std::string rankBody(const RankContext& ctx) {
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  err = blockInUse();
  // Dozens of processes on 2 cores: fewer calls, the slots still wrap 12 times.
  const int calls = ctx.nranks > 16 ? kCalls / 3 : kCalls;
  for (int k = 0; k < calls && err.empty(); ++k) {
    // A rank lags now and then: its peers run ahead until the slots run out.
    if (k % 37 == ctx.rank) usleep(300);
    err = k % 2 ? oneCall<float>(comm, tuttiFloat32, ctx.nranks, ctx.rank, k)
                : oneCall<int32_t>(comm, tuttiInt32, ctx.nranks, ctx.rank, k);
    if (err.empty() && k % 50 == 49 && tuttiBarrier(comm, nullptr) != tuttiSuccess)
      err = std::string("barrier failed: ") + tuttiGetLastError(comm);
  }
  if (err.empty()) err = broadcastStream(comm, ctx.nranks, ctx.rank);
  tuttiCommDestroy(comm);
  return err;
}

class SmallCalls : public ::testing::TestWithParam<int> {};

TEST_P(SmallCalls, BackToBackCallsOfEveryKindMatchTheReference) {
  auto env = [](int) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"},
                                              {"TUTTI_DEBUG", "INFO"},
                                              {"TUTTI_DEBUG_SUBSYS", "INIT"},
                                              {"TUTTI_DEBUG_FILE", kLogPattern}};
  };
  EXPECT_EQ(summarize(runRanks(GetParam(), rankBody, env, 240)), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, SmallCalls, ::testing::Values(2, 3, 5, 8, 17, 64),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

}  // namespace
}  // namespace tutti_test
