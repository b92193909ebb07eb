// tuttiCommShrink: survivors of a dead, stopped or silent rank go on in a
// communicator without it. 4 rank processes over TCP and over shared
// memory; the survivors' all-reduces and all-gathers on the shrunk
// communicator are checked element by element against a reference made
// for the new ranks, and each survivor reports the time from its failed
// call (or its shrink) to the first completed call of the new communicator.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

#include "tests/harness/ranks.h"
#include "tests/harness/reference.h"

namespace tutti_test {
namespace {

constexpr int kRanks = 4;
constexpr int kTimeoutSeconds = 3;

enum class Victim { kKilled, kStopped, kSilent };

const char* label(Victim v) {
  return v == Victim::kKilled ? "killed" : v == Victim::kStopped ? "stopped" : "silent";
}

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// A child of the victim signals it: a kill now, or a stop, then a kill
// once the survivors are done with it.
void signalMeLater(Victim v, int ms) {
  const pid_t victim = getpid();
  if (fork() != 0) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (v == Victim::kStopped) {
    kill(victim, SIGSTOP);
    std::this_thread::sleep_for(std::chrono::seconds(kTimeoutSeconds + 8));
  }
  kill(victim, SIGKILL);
  _exit(0);
}

// The shrunk communicator's calls, element by element, at awkward sizes.
std::string checkCalls(tuttiComm_t c, int rank, int nranks) {
  const tuttiDataType_t types[] = {tuttiFloat32, tuttiInt32, tuttiBfloat16};
  const tuttiRedOp_t ops[] = {tuttiSum, tuttiMax};
  const size_t counts[] = {1, 7, 1031, 262147};
  for (tuttiDataType_t t : types)
    for (tuttiRedOp_t op : ops)
      for (size_t n : counts) {
        const size_t es = elemSize(t);
        std::vector<char> in(n * es), out(n * es), want(n * es);
        fillInput(in.data(), n, t, op, rank, 0, 77);
        fillReduced(want.data(), n, t, op, nranks, 0, 77);
        if (tuttiAllReduce(in.data(), out.data(), n, t, op, c, nullptr) != tuttiSuccess)
          return std::string("all-reduce on the shrunk communicator failed: ") + tuttiGetLastError(c);
        std::string report;
        if (compareElements(out.data(), want.data(), n, t, &report))
          return std::string("all-reduce ") + typeLabel(t) + " " + opLabel(op) + " of " + std::to_string(n) +
                 " wrong: " + report;
      }
  const size_t n = 1031;
  std::vector<int32_t> mine(n), all(n * nranks);
  for (size_t i = 0; i < n; ++i) mine[i] = static_cast<int32_t>(rank * 100000 + i);
  if (tuttiAllGather(mine.data(), all.data(), n, tuttiInt32, c, nullptr) != tuttiSuccess)
    return std::string("all-gather on the shrunk communicator failed: ") + tuttiGetLastError(c);
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < n; ++i)
      if (all[r * n + i] != static_cast<int32_t>(r * 100000 + i))
        return "all-gather wrong at rank " + std::to_string(r) + " element " + std::to_string(i);
  return "";
}

std::string survivor(tuttiComm_t comm, const RankContext& ctx, Victim v, int victim) {
  std::vector<float> buf(1 << 18, 1.0f);
  Clock::time_point failedAt;
  tuttiComm_t child = nullptr;
  tuttiResult_t shrunk;
  if (v == Victim::kSilent) {
    // The victim never enters this call; another thread revokes and shrinks.
    auto inCall = std::async(std::launch::async, [&] {
      return tuttiAllReduce(buf.data(), buf.data(), 1000, tuttiFloat32, tuttiSum, comm, nullptr);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    failedAt = Clock::now();
    shrunk = tuttiCommShrink(comm, &victim, 1, &child, nullptr, TUTTI_SHRINK_ABORT);
    if (inCall.wait_for(std::chrono::seconds(kTimeoutSeconds + 5)) != std::future_status::ready)
      return "the call in flight did not end after the shrink revoked the communicator";
    if (inCall.get() == tuttiSuccess) return "the call the victim never entered succeeded";
  } else {
    tuttiResult_t r = tuttiSuccess;
    for (int calls = 0; calls < 1000000 && r == tuttiSuccess; ++calls)
      r = tuttiAllReduce(buf.data(), buf.data(), 1 + calls % 4096, tuttiFloat32, tuttiMax, comm, nullptr);
    failedAt = Clock::now();
    if (r == tuttiSuccess) return std::string("never saw the ") + label(v) + " rank";
    // Nobody lists the victim: the survivors exclude whom tutti named.
    shrunk = tuttiCommShrink(comm, nullptr, 0, &child, nullptr, TUTTI_SHRINK_EXCLUDE_FAILED);
  }
  if (shrunk != tuttiSuccess) return std::string("tuttiCommShrink: ") + tuttiGetLastError(comm);
  int n = 0, rank = -1;
  tuttiCommCount(child, &n);
  tuttiCommUserRank(child, &rank);
  const int wantRank = ctx.rank - (ctx.rank > victim ? 1 : 0);
  if (n != kRanks - 1 || rank != wantRank)
    return "the shrunk communicator has " + std::to_string(n) + " ranks and this one is " + std::to_string(rank) +
           "; want " + std::to_string(kRanks - 1) + " and " + std::to_string(wantRank);
  float one = 1, sum = 0;
  if (tuttiAllReduce(&one, &sum, 1, tuttiFloat32, tuttiSum, child, nullptr) != tuttiSuccess || sum != n)
    return std::string("the first call of the shrunk communicator: ") + tuttiGetLastError(child);
  fprintf(stderr, "rank %d: %s victim %d: %.1f ms from the failed call to the shrunk communicator's first call\n",
          ctx.rank, label(v), victim, msSince(failedAt));
  std::string err = checkCalls(child, rank, n);
  tuttiCommDestroy(child);
  tuttiCommAbort(comm);
  return err;
}

std::string rankBody(const RankContext& ctx, Victim v, int victim) {
  tuttiComm_t comm = nullptr;
  if (std::string err = initComm(ctx, &comm); !err.empty()) return err;
  if (ctx.rank != victim) return survivor(comm, ctx, v, victim);
  if (v != Victim::kSilent) {
    signalMeLater(v, 200);
    std::vector<float> buf(1 << 18, 1.0f);
    for (int calls = 0;; ++calls)
      if (tuttiAllReduce(buf.data(), buf.data(), 1 + calls % 4096, tuttiFloat32, tuttiMax, comm, nullptr) !=
          tuttiSuccess)
        pause();  // the signal comes
  }
  // Alive and not calling, until the survivors are surely done.
  std::this_thread::sleep_for(std::chrono::seconds(kTimeoutSeconds + 8));
  tuttiCommAbort(comm);
  return "";
}

struct Case {
  Victim victim;
  const char* net;
};

class Shrink : public ::testing::TestWithParam<Case> {};

TEST_P(Shrink, SurvivorsGoOnWithoutTheRankInANewCommunicator) {
  const Case c = GetParam();
  const int victim = 1;
  auto outcomes = runRanks(kRanks, [c, victim](const RankContext& ctx) { return rankBody(ctx, c.victim, victim); },
                           [c](int) {
                             std::map<std::string, std::string> e{{"TUTTI_SOCKET_IFNAME", "lo"},
                                                                  {"TUTTI_TIMEOUT", std::to_string(kTimeoutSeconds)}};
                             if (std::string(c.net) == "socket") e["TUTTI_SHM_DISABLE"] = "1";
                             return e;
                           },
                           120);
  for (const auto& o : outcomes) {
    if (o.rank == victim && c.victim != Victim::kSilent)
      EXPECT_NE(o.failure.find("signal 9"), std::string::npos) << "the victim: " << o.failure;
    else
      EXPECT_EQ(o.failure, "") << "rank " << o.rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Victims, Shrink,
                         ::testing::Values(Case{Victim::kKilled, "socket"}, Case{Victim::kKilled, "shm"},
                                           Case{Victim::kStopped, "socket"}, Case{Victim::kStopped, "shm"},
                                           Case{Victim::kSilent, "socket"}, Case{Victim::kSilent, "shm"}),
                         [](const auto& info) { return std::string(label(info.param.victim)) + "_" + info.param.net; });

// A killed rank's place is taken by a new process: the survivors shrink,
// then grow by the replacement, which gets the coordinator's id through a
// file; the grown communicator's calls are checked as a new one's would be.
std::string replacedRank(const RankContext& ctx, const std::string& idFile) {
  constexpr int kVictim = 1, kOld = kRanks, kReplacement = kRanks;
  if (ctx.rank == kReplacement) {
    tuttiUniqueId id;
    for (int tries = 0;; ++tries) {
      FILE* f = fopen(idFile.c_str(), "rb");
      const bool got = f && fread(&id, sizeof id, 1, f) == 1;
      if (f) fclose(f);
      if (got) break;
      if (tries > 3000) return "no id from the coordinator";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    tuttiComm_t grown = nullptr;
    if (tuttiCommGrow(nullptr, kOld, &id, kOld - 1, &grown, nullptr) != tuttiSuccess)
      return std::string("joining by tuttiCommGrow: ") + tuttiGetLastError(nullptr);
    std::string err = checkCalls(grown, kOld - 1, kOld);
    tuttiCommDestroy(grown);
    return err;
  }
  RankContext old = ctx;
  old.nranks = kOld;
  tuttiComm_t comm = nullptr;
  if (std::string err = initComm(old, &comm); !err.empty()) return err;
  if (ctx.rank == kVictim) signalMeLater(Victim::kKilled, 200);
  std::vector<float> buf(1 << 16, 1.0f);
  tuttiResult_t r = tuttiSuccess;
  for (int calls = 0; calls < 1000000 && r == tuttiSuccess; ++calls)
    r = tuttiAllReduce(buf.data(), buf.data(), 1 + calls % 4096, tuttiFloat32, tuttiMax, comm, nullptr);
  if (ctx.rank == kVictim) pause();
  tuttiComm_t shrunk = nullptr, grown = nullptr;
  if (tuttiCommShrink(comm, nullptr, 0, &shrunk, nullptr, TUTTI_SHRINK_EXCLUDE_FAILED) != tuttiSuccess)
    return std::string("tuttiCommShrink: ") + tuttiGetLastError(comm);
  int rank = -1;
  tuttiCommUserRank(shrunk, &rank);
  tuttiUniqueId id;
  const bool coordinator = rank == 0;
  if (coordinator) {
    if (tuttiCommGetUniqueId(shrunk, &id) != tuttiSuccess)
      return std::string("tuttiCommGetUniqueId: ") + tuttiGetLastError(shrunk);
    const std::string tmp = idFile + ".tmp";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp.c_str(), idFile.c_str()) != 0)
      return "could not write the id for the replacement";
  }
  const auto t0 = Clock::now();
  if (tuttiCommGrow(shrunk, kOld, coordinator ? &id : nullptr, -1, &grown, nullptr) != tuttiSuccess)
    return std::string("tuttiCommGrow: ") + tuttiGetLastError(shrunk);
  fprintf(stderr, "rank %d: tuttiCommGrow from 3 to 4 ranks took %.1f ms\n", ctx.rank, msSince(t0));
  int grownRank = -1;
  tuttiCommUserRank(grown, &grownRank);
  if (grownRank != rank) return "kept rank " + std::to_string(rank) + " became " + std::to_string(grownRank);
  std::string err = checkCalls(grown, grownRank, kOld);
  tuttiCommDestroy(grown);
  tuttiCommDestroy(shrunk);
  tuttiCommAbort(comm);
  return err;
}

TEST(Grow, AKilledRanksPlaceIsTakenByANewProcess) {
  char dir[] = "/tmp/tutti-grow-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string idFile = std::string(dir) + "/id";
  auto outcomes = runRanks(kRanks + 1, [idFile](const RankContext& ctx) { return replacedRank(ctx, idFile); },
                           [](int) {
                             return std::map<std::string, std::string>{
                                 {"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", std::to_string(kTimeoutSeconds)}};
                           },
                           120);
  for (const auto& o : outcomes) {
    if (o.rank == 1)
      EXPECT_NE(o.failure.find("signal 9"), std::string::npos) << "the victim: " << o.failure;
    else
      EXPECT_EQ(o.failure, "") << "rank " << o.rank;
  }
  unlink(idFile.c_str());
  rmdir(dir);
}

// Wrong arguments are refused naming what is wrong, and survivors that
// exclude different lists fail saying so (the leader's rank 0 times out
// alone instead of hanging).
std::string badArgumentsRank(const RankContext& ctx) {
  tuttiComm_t comm = nullptr;
  if (std::string err = initComm(ctx, &comm); !err.empty()) return err;
  tuttiComm_t child = nullptr;
  std::string failures;
  auto expect = [&](const char* what, tuttiResult_t got, tuttiResult_t want, const std::string& says) {
    const std::string msg = tuttiGetLastError(comm);
    if (got != want || msg.find(says) == std::string::npos)
      failures += std::string(what) + ": result " + std::to_string(got) + ", \"" + msg + "\"; ";
  };
  const int outside = 7, self = ctx.rank;
  expect("a NULL newcomm", tuttiCommShrink(comm, nullptr, 0, nullptr, nullptr, 0), tuttiInvalidArgument, "newcomm");
  expect("a rank outside", tuttiCommShrink(comm, &outside, 1, &child, nullptr, 0), tuttiInvalidArgument,
         "excludeRanks[0] is 7");
  expect("a negative count", tuttiCommShrink(comm, &outside, -1, &child, nullptr, 0), tuttiInvalidArgument,
         "excludeCount (-1)");
  expect("an unknown flag", tuttiCommShrink(comm, nullptr, 0, &child, nullptr, 0x4), tuttiInvalidArgument,
         "shrinkFlags 4");
  expect("itself excluded", tuttiCommShrink(comm, &self, 1, &child, nullptr, 0), tuttiInvalidUsage,
         "only the ranks that stay");
  expect("a grow to no more ranks", tuttiCommGrow(comm, 3, nullptr, -1, &child, nullptr), tuttiInvalidArgument,
         "nRanks 3 is not more than");
  expect("an existing rank's number", tuttiCommGrow(comm, 4, nullptr, 0, &child, nullptr), tuttiInvalidArgument,
         "an existing rank passes -1");
  expect("a grow with no coordinator", tuttiCommGrow(comm, 4, nullptr, -1, &child, nullptr), tuttiInvalidUsage,
         "no rank of the communicator passed the id");
  // Rank 0 excludes nobody, ranks 1 and 2 each other.
  const int other = ctx.rank == 1 ? 2 : 1;
  tuttiResult_t r = tuttiCommShrink(comm, &other, ctx.rank == 0 ? 0 : 1, &child, nullptr, 0);
  if (ctx.rank != 0)
    expect("lists that differ", r, tuttiInvalidUsage,
           "excludes {" + std::to_string(other) + "} but rank 0 (the leader) excludes another list of 0 rank(s)");
  else if (r == tuttiSuccess)
    failures += "rank 0 made a communicator that ranks 1 and 2 refused; ";
  tuttiCommAbort(comm);
  return failures;
}

TEST(ShrinkArguments, WrongArgumentsAndDifferentListsAreRefusedSayingWhy) {
  EXPECT_EQ(summarize(runRanks(3, badArgumentsRank,
                               [](int) {
                                 return std::map<std::string, std::string>{
                                     {"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", std::to_string(kTimeoutSeconds)}};
                               },
                               60)),
            "");
}

}  // namespace
}  // namespace tutti_test
