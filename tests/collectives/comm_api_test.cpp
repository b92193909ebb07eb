// The communicator API frameworks need: tuttiCommSplit (colors, keys,
// TUTTI_SPLIT_NOCOLOR, nested), tuttiCommInitRankConfig (name, timeout,
// non-blocking), non-blocking calls polled with tuttiCommGetAsyncError,
// tuttiCommFinalize, tuttiCommMemoryHeld, tuttiCommLastChoice, and their
// argument errors. Results are checked element by element against values
// each rank computes on its own.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

std::map<std::string, std::string> loopbackEnv(int) {
  return {{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "60"}};
}

std::string failed(const char* what, tuttiResult_t r, tuttiComm_t comm) {
  return std::string(what) + " returned " + tuttiGetErrorString(r) + ": " + tuttiGetLastError(comm);
}

// Polls until the communicator's background work is done; returns its result.
tuttiResult_t waitAsync(tuttiComm_t comm) {
  tuttiResult_t state = tuttiInProgress;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (state == tuttiInProgress && std::chrono::steady_clock::now() < deadline) {
    if (tuttiCommGetAsyncError(comm, &state) != tuttiSuccess) return tuttiInternalError;
    if (state == tuttiInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return state;
}

// Sum over `members` of f(member) for each element i: what an all-reduce of
// value(rank, i) = rank * 1000 + i must give.
std::vector<int64_t> expectedSum(const std::vector<int>& members, size_t count) {
  std::vector<int64_t> want(count, 0);
  for (int m : members)
    for (size_t i = 0; i < count; ++i) want[i] += int64_t{m} * 1000 + static_cast<int64_t>(i);
  return want;
}

std::string checkAllReduce(tuttiComm_t comm, int parentRank, const std::vector<int>& members,
                           size_t count, bool blocking) {
  std::vector<int64_t> buf(count);
  for (size_t i = 0; i < count; ++i) buf[i] = int64_t{parentRank} * 1000 + static_cast<int64_t>(i);
  tuttiResult_t r = tuttiAllReduce(buf.data(), buf.data(), count, tuttiInt64, tuttiSum, comm, nullptr);
  if (!blocking && r == tuttiInProgress) r = waitAsync(comm);
  if (r != tuttiSuccess) return failed("tuttiAllReduce", r, comm);
  std::vector<int64_t> want = expectedSum(members, count);
  for (size_t i = 0; i < count; ++i)
    if (buf[i] != want[i])
      return "element " + std::to_string(i) + " is " + std::to_string(buf[i]) + ", want " +
             std::to_string(want[i]);
  return "";
}

TEST(CommSplit, ColorsKeysNoColorAndNested) {
  const int n = 5;
  auto body = [](const RankContext& ctx) -> std::string {
    tuttiComm_t world = nullptr;
    std::string err = initComm(ctx, &world);
    if (!err.empty()) return err;
    // Rank 4 joins nothing; the others split by parity, ordered by descending rank.
    int color = ctx.rank == 4 ? TUTTI_SPLIT_NOCOLOR : ctx.rank % 2;
    tuttiComm_t half = nullptr;
    tuttiResult_t r = tuttiCommSplit(world, color, -ctx.rank, &half, nullptr);
    if (r != tuttiSuccess) return failed("tuttiCommSplit", r, world);
    if (ctx.rank == 4) {
      if (half) return "TUTTI_SPLIT_NOCOLOR gave a communicator";
    } else {
      std::vector<int> members = ctx.rank % 2 ? std::vector<int>{3, 1} : std::vector<int>{2, 0};
      int size = 0, rank = -1;
      tuttiCommCount(half, &size);
      tuttiCommUserRank(half, &rank);
      int want = static_cast<int>(std::find(members.begin(), members.end(), ctx.rank) - members.begin());
      if (size != 2 || rank != want)
        return "split gave rank " + std::to_string(rank) + " of " + std::to_string(size) +
               ", want " + std::to_string(want) + " of 2";
      err = checkAllReduce(half, ctx.rank, members, 100003, true);
      if (!err.empty()) return "on the split: " + err;
      // Split again: one rank each, with the same key (ties keep the parent's order).
      tuttiComm_t single = nullptr;
      r = tuttiCommSplit(half, rank, 0, &single, nullptr);
      if (r != tuttiSuccess) return failed("nested tuttiCommSplit", r, half);
      err = checkAllReduce(single, ctx.rank, {ctx.rank}, 7, true);
      if (!err.empty()) return "on the nested split: " + err;
      tuttiCommDestroy(single);
      tuttiCommDestroy(half);
    }
    // The parent still works, and all of its ranks agree after the split.
    err = checkAllReduce(world, ctx.rank, {0, 1, 2, 3, 4}, 1023, true);
    if (!err.empty()) return "on the parent after the split: " + err;
    tuttiCommDestroy(world);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(n, body, loopbackEnv, 120)), "");
}

TEST(CommConfig, NonBlockingInitCallsGroupsSplitAndFinalize) {
  const int n = 3;
  auto body = [](const RankContext& ctx) -> std::string {
    tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.commName = "trainer";
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitRankConfig(&comm, ctx.nranks, ctx.id, ctx.rank, &config);
    // tutti runs every non-blocking init and call in the background.
    if (r != tuttiInProgress) return failed("tuttiCommInitRankConfig", r, nullptr);
    if (!comm) return "non-blocking init gave no handle";
    if ((r = waitAsync(comm)) != tuttiSuccess) return failed("non-blocking init", r, nullptr);
    // Several calls in a row return at once and complete in order.
    const size_t count = 300007;
    std::vector<std::vector<float>> bufs(4, std::vector<float>(count));
    for (size_t k = 0; k < bufs.size(); ++k) {
      for (size_t i = 0; i < count; ++i) bufs[k][i] = static_cast<float>((ctx.rank + 1) * (k + 1)) + (i % 7);
      r = tuttiAllReduce(bufs[k].data(), bufs[k].data(), count, tuttiFloat32, tuttiSum, comm, nullptr);
      if (r != tuttiInProgress) return failed("non-blocking tuttiAllReduce", r, comm);
    }
    if ((r = waitAsync(comm)) != tuttiSuccess) return failed("the queued all-reduces", r, comm);
    for (size_t k = 0; k < bufs.size(); ++k)
      for (size_t i = 0; i < count; ++i) {
        float want = static_cast<float>(6 * (k + 1) + 3 * (i % 7));
        if (bufs[k][i] != want)
          return "all-reduce " + std::to_string(k) + " element " + std::to_string(i) + " is " +
                 std::to_string(bufs[k][i]) + ", want " + std::to_string(want);
      }
    // An all-to-all from grouped sends and receives runs in the background too.
    const size_t per = 1001;
    std::vector<int32_t> in(per * ctx.nranks), out(per * ctx.nranks, -1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = ctx.rank * 100000 + static_cast<int32_t>(i);
    tuttiGroupStart();
    for (int p = 0; p < ctx.nranks; ++p) {
      tuttiSend(in.data() + p * per, per, tuttiInt32, p, comm, nullptr);
      tuttiRecv(out.data() + p * per, per, tuttiInt32, p, comm, nullptr);
    }
    r = tuttiGroupEnd();
    if (r == tuttiInProgress) r = waitAsync(comm);
    if (r != tuttiSuccess) return failed("non-blocking all-to-all", r, comm);
    for (int p = 0; p < ctx.nranks; ++p)
      for (size_t i = 0; i < per; ++i) {
        int32_t want = p * 100000 + static_cast<int32_t>(ctx.rank * per + i);
        if (out[p * per + i] != want)
          return "all-to-all from rank " + std::to_string(p) + " element " + std::to_string(i) +
                 " is " + std::to_string(out[p * per + i]) + ", want " + std::to_string(want);
      }
    // A non-blocking split inherits non-blocking.
    tuttiComm_t pair = nullptr;
    r = tuttiCommSplit(comm, ctx.rank < 2 ? 0 : TUTTI_SPLIT_NOCOLOR, 0, &pair, nullptr);
    if (r == tuttiInProgress) r = waitAsync(comm);
    if (r != tuttiSuccess) return failed("non-blocking tuttiCommSplit", r, comm);
    if (ctx.rank < 2) {
      if (!pair) return "non-blocking split gave no handle";
      if ((r = waitAsync(pair)) != tuttiSuccess) return failed("the split's init", r, pair);
      std::string err = checkAllReduce(pair, ctx.rank, {0, 1}, 4099, false);
      if (!err.empty()) return "on the non-blocking split: " + err;
      tuttiCommDestroy(pair);
    } else if (pair) {
      return "TUTTI_SPLIT_NOCOLOR gave a communicator";
    }
    // Finalize completes; afterwards calls are refused, naming the communicator.
    r = tuttiCommFinalize(comm);
    if (r == tuttiInProgress) r = waitAsync(comm);
    if (r != tuttiSuccess) return failed("tuttiCommFinalize", r, comm);
    r = tuttiAllReduce(bufs[0].data(), bufs[0].data(), count, tuttiFloat32, tuttiSum, comm, nullptr);
    std::string message = tuttiGetLastError(comm);
    if (r != tuttiInvalidUsage || message.find("finalized") == std::string::npos ||
        message.find("trainer") == std::string::npos)
      return "a call after finalize returned " + std::string(tuttiGetErrorString(r)) + ": " + message;
    return tuttiCommDestroy(comm) == tuttiSuccess ? "" : "tuttiCommDestroy failed";
  };
  EXPECT_EQ(summarize(runRanks(n, body, loopbackEnv, 120)), "");
}

TEST(CommConfig, TimeoutFromConfigBoundsAWait) {
  auto body = [](const RankContext& ctx) -> std::string {
    tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
    config.timeoutSeconds = 2;
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitRankConfig(&comm, ctx.nranks, ctx.id, ctx.rank, &config);
    if (r != tuttiSuccess) return failed("tuttiCommInitRankConfig", r, nullptr);
    if (ctx.rank == 1) {  // never joins the all-reduce
      sleep(6);
      tuttiCommAbort(comm);
      return "";
    }
    float x = 1;
    auto start = std::chrono::steady_clock::now();
    r = tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, comm, nullptr);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    tuttiCommAbort(comm);
    if (r != tuttiTimeout) return "the lonely all-reduce returned " + std::string(tuttiGetErrorString(r));
    if (took < 1.5 || took > 5) return "it failed after " + std::to_string(took) + " s, want about 2";
    return "";
  };
  EXPECT_EQ(summarize(runRanks(2, body, loopbackEnv, 60)), "");
}

// A program built before callsBesideCompute passes a smaller struct: what
// lies past its end is not read, and its calls run as before; a program
// that sets the field runs them as well.
TEST(CommConfig, AnOlderStructLeavesLaterFieldsAtTheirDefaults) {
  auto body = [](const RankContext& ctx) -> std::string {
    tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
    if (ctx.rank == 0) {
      config.size = offsetof(tuttiConfig_t, callsBesideCompute);
      config.callsBesideCompute = 7;  // beyond the older struct: never read
    } else {
      config.callsBesideCompute = 1;
    }
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitRankConfig(&comm, ctx.nranks, ctx.id, ctx.rank, &config);
    if (r != tuttiSuccess) return failed("tuttiCommInitRankConfig", r, nullptr);
    std::vector<float> x(300000, static_cast<float>(ctx.rank + 1));
    r = tuttiAllReduce(x.data(), x.data(), x.size(), tuttiFloat32, tuttiSum, comm, nullptr);
    tuttiCommDestroy(comm);
    if (r != tuttiSuccess) return failed("tuttiAllReduce", r, nullptr);
    const float want = static_cast<float>(ctx.nranks * (ctx.nranks + 1) / 2);
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] != want) return "element " + std::to_string(i) + " is " + std::to_string(x[i]);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(3, body, loopbackEnv, 60)), "");
}

TEST(CommConfig, BadArgumentsAreRefused) {
  auto body = [](const RankContext& ctx) -> std::string {
    tuttiConfig_t garbage{};
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitRankConfig(&comm, ctx.nranks, ctx.id, ctx.rank, &garbage);
    std::string message = tuttiGetLastError(nullptr);
    if (r != tuttiInvalidArgument || message.find("TUTTI_CONFIG_INITIALIZER") == std::string::npos)
      return "an uninitialized config gave " + std::string(tuttiGetErrorString(r)) + ": " + message;
    tuttiConfig_t beside = TUTTI_CONFIG_INITIALIZER;
    beside.callsBesideCompute = 2;
    r = tuttiCommInitRankConfig(&comm, ctx.nranks, ctx.id, ctx.rank, &beside);
    message = tuttiGetLastError(nullptr);
    if (r != tuttiInvalidArgument || message.find("callsBesideCompute is 2") == std::string::npos)
      return "callsBesideCompute 2 gave " + std::string(tuttiGetErrorString(r)) + ": " + message;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    tuttiComm_t child = nullptr;
    r = tuttiCommSplit(comm, -7, 0, &child, nullptr);
    message = tuttiGetLastError(comm);
    if (r != tuttiInvalidArgument || message.find("color -7") == std::string::npos)
      return "color -7 gave " + std::string(tuttiGetErrorString(r)) + ": " + message;
    if (tuttiCommSplit(comm, 0, 0, nullptr, nullptr) != tuttiInvalidArgument)
      return "a NULL newcomm was accepted";
    if (tuttiCommFinalize(comm) != tuttiSuccess) return "tuttiCommFinalize failed";
    if (tuttiCommFinalize(comm) != tuttiInvalidUsage) return "a second finalize was accepted";
    tuttiCommDestroy(comm);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(2, body, loopbackEnv, 60)), "");
}

}  // namespace
}  // namespace tutti_test

namespace tutti_test {
namespace {

// What 8 ranks of one host hold, after every collective and a send and
// receive with every peer (each pair's own connections): under 64 MiB of
// host memory a rank, no device memory, and more than at init.
TEST(CommMemory, EightRanksOfAHostHoldUnder64MiBEachAfterEveryKindOfCall) {
  constexpr int n = 8;
  constexpr size_t kLimit = size_t{64} << 20;
  auto body = [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitRank(&comm, n, ctx.id, ctx.rank);
    if (r != tuttiSuccess) return failed("init", r, nullptr);
    size_t host = 0, device = 0, atInit = 0;
    if ((r = tuttiCommMemoryHeld(comm, nullptr, &device)) != tuttiInvalidArgument)
      return "a NULL hostBytes gave " + std::string(tuttiGetErrorString(r));
    if ((r = tuttiCommMemoryHeld(comm, &atInit, &device)) != tuttiSuccess) return failed("tuttiCommMemoryHeld", r, comm);
    if (atInit == 0) return "no host memory held after init: the rings' connections are made there";
    std::string f = checkAllReduce(comm, ctx.rank, {0, 1, 2, 3, 4, 5, 6, 7}, 100000, true);
    std::vector<float> in(4096, 1.0f), out(4096 * n);
    if (f.empty() && (r = tuttiAllGather(in.data(), out.data(), in.size(), tuttiFloat32, comm, nullptr)))
      f = failed("tuttiAllGather", r, comm);
    if (f.empty() && (r = tuttiBroadcast(in.data(), out.data(), in.size(), tuttiFloat32, 3, comm, nullptr)))
      f = failed("tuttiBroadcast", r, comm);
    if (f.empty() && (r = tuttiReduce(in.data(), out.data(), in.size(), tuttiFloat32, tuttiSum, 5, comm, nullptr)))
      f = failed("tuttiReduce", r, comm);
    if (f.empty() && (r = tuttiReduceScatter(out.data(), in.data(), in.size(), tuttiFloat32, tuttiSum, comm, nullptr)))
      f = failed("tuttiReduceScatter", r, comm);
    // Every pair: send to rank + k, receive from rank - k, in one group.
    std::vector<int> mine(1000, ctx.rank), got(1000 * n, -1);
    for (int k = 1; k < n && f.empty(); ++k) {
      tuttiGroupStart();
      tuttiSend(mine.data(), mine.size(), tuttiInt32, (ctx.rank + k) % n, comm, nullptr);
      tuttiRecv(got.data() + k * 1000, mine.size(), tuttiInt32, (ctx.rank + n - k) % n, comm, nullptr);
      if ((r = tuttiGroupEnd()) != tuttiSuccess) f = failed("send/recv group", r, comm);
      else if (got[k * 1000] != (ctx.rank + n - k) % n || got[k * 1000 + 999] != (ctx.rank + n - k) % n)
        f = "from rank " + std::to_string((ctx.rank + n - k) % n) + " came " + std::to_string(got[k * 1000]);
    }
    if (f.empty() && (r = tuttiCommMemoryHeld(comm, &host, &device)) != tuttiSuccess)
      f = failed("tuttiCommMemoryHeld", r, comm);
    tuttiCommDestroy(comm);
    if (!f.empty()) return f;
    if (device != 0) return "a host-only communicator holds " + std::to_string(device) + " bytes of device memory";
    if (host <= atInit) return "the pairs' connections added nothing: " + std::to_string(host) + " bytes";
    if (host >= kLimit) return "rank " + std::to_string(ctx.rank) + " holds " + std::to_string(host >> 20) + " MiB";
    return "";
  };
  EXPECT_EQ(summarize(runRanks(n, body, loopbackEnv, 120)), "");
}

// What tuttiCommLastChoice says after a call of `count` floats, as a string
// ("" when it answered what `want` asks; else what is wrong).
struct ChoiceWanted {
  unsigned long long sequence;
  const char* algorithm;  // nullptr: any of the model's
  int onHostBlock;
};

std::string checkLastChoice(tuttiComm_t comm, const ChoiceWanted& want, tuttiCallChoice_t* got) {
  tuttiResult_t r = tuttiCommLastChoice(comm, got);
  if (r != tuttiSuccess) return failed("tuttiCommLastChoice", r, comm);
  const std::string said = "sequence " + std::to_string(got->sequence) + ", " + got->algorithm + ", host block " +
                           std::to_string(got->onHostBlock) + ", " + std::to_string(got->nchannels) +
                           " channel(s), predicted " + std::to_string(got->predictedUs) + " us";
  if (got->sequence != want.sequence) return "want call #" + std::to_string(want.sequence) + ", got " + said;
  if (want.algorithm && std::strcmp(got->algorithm, want.algorithm) != 0)
    return std::string("want ") + want.algorithm + ", got " + said;
  static const char* const kNames[] = {"ring", "tree", "oneshot", "rd", "twolevel", "hd"};
  if (std::none_of(std::begin(kNames), std::end(kNames), [&](const char* n) { return std::strcmp(n, got->algorithm) == 0; }))
    return "not an algorithm of the model: " + said;
  if (got->onHostBlock != want.onHostBlock) return "host block wrong: " + said;
  if (got->predictedUs <= 0) return "no prediction: " + said;
  if (got->onHostBlock ? got->nchannels != 0 || got->chunkBytes != 0 : got->nchannels < 1 || got->chunkBytes == 0)
    return "channels or chunk wrong: " + said;
  return "";
}

// The cost model's choice for the latest host collective, as the API gives
// it: the host block's one-shot for a small all-reduce of one host, a
// pipeline for 1 MiB, sends and receives leaving it; TUTTI_ALGO=ring forces
// rings at every size. A NULL answer is refused.
TEST(CommLastChoice, NamesTheModelsChoiceAndPredictionForTheLatestHostCall) {
  for (const bool ringsOnly : {false, true}) {
    auto body = [ringsOnly](const RankContext& ctx) -> std::string {
      tuttiComm_t comm = nullptr;
      tuttiResult_t r = tuttiCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank);
      if (r != tuttiSuccess) return failed("init", r, nullptr);
      tuttiCallChoice_t small{}, big{}, after{};
      std::string f;
      if ((r = tuttiCommLastChoice(comm, nullptr)) != tuttiInvalidArgument)
        f = "a NULL choice gave " + std::string(tuttiGetErrorString(r));
      if (f.empty() && (r = tuttiCommLastChoice(comm, &small)) != tuttiSuccess) f = failed("tuttiCommLastChoice", r, comm);
      if (f.empty() && (small.sequence != 0 || small.algorithm[0] != 0 || small.predictedUs != 0))
        f = "before any call it named call #" + std::to_string(small.sequence) + " " + small.algorithm;
      if (f.empty()) f = checkAllReduce(comm, ctx.rank, {0, 1}, 2, true);
      if (f.empty()) f = checkLastChoice(comm, {1, ringsOnly ? "ring" : "oneshot", ringsOnly ? 0 : 1}, &small);
      if (f.empty()) f = checkAllReduce(comm, ctx.rank, {0, 1}, 1 << 17, true);  // 1 MiB of int64
      if (f.empty()) f = checkLastChoice(comm, {2, ringsOnly ? "ring" : nullptr, 0}, &big);
      if (f.empty() && big.predictedUs <= small.predictedUs)
        f = "1 MiB predicted " + std::to_string(big.predictedUs) + " us, 16 B " + std::to_string(small.predictedUs);
      std::vector<int> mine(100, ctx.rank), got(100);
      tuttiGroupStart();
      tuttiSend(mine.data(), mine.size(), tuttiInt32, 1 - ctx.rank, comm, nullptr);
      tuttiRecv(got.data(), got.size(), tuttiInt32, 1 - ctx.rank, comm, nullptr);
      if ((r = tuttiGroupEnd()) != tuttiSuccess && f.empty()) f = failed("send/recv", r, comm);
      if (f.empty()) f = checkLastChoice(comm, {2, big.algorithm, 0}, &after);
      tuttiCommDestroy(comm);
      return f;
    };
    auto env = [ringsOnly](int rank) {
      auto e = loopbackEnv(rank);
      if (ringsOnly) e["TUTTI_ALGO"] = "ring";
      return e;
    };
    EXPECT_EQ(summarize(runRanks(2, body, env, 120)), "") << (ringsOnly ? "TUTTI_ALGO=ring" : "the model's choice");
  }
}

}  // namespace
}  // namespace tutti_test
