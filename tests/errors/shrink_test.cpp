// tuttiCommShrink and tuttiCommGrow on one host: survivors of a dead,
// stopped or silent rank go on in a communicator without it, over TCP and
// over shared memory, on host buffers and on device buffers (the emulated
// device); a killed rank's place is taken by a new process through a grow;
// wrong arguments are refused. Every call of a new communicator is checked
// element by element (tests/harness/shrink_trial.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "tests/harness/ranks.h"
#include "tests/harness/shrink_trial.h"

namespace tutti_test {
namespace {

constexpr int kRanks = 4;
constexpr int kTimeoutSeconds = 3;

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Case {
  Victim victim;
  const char* net;
  bool deviceBuffers;
};

class Shrink : public ::testing::TestWithParam<Case> {};

TEST_P(Shrink, SurvivorsGoOnWithoutTheRankInANewCommunicator) {
  const Case c = GetParam();
  const ShrinkTrial trial{c.victim, 1, kTimeoutSeconds, c.deviceBuffers};
  auto outcomes = runRanks(kRanks, [trial](const RankContext& ctx) { return runShrinkRank(ctx, trial); },
                           [c](int) {
                             std::map<std::string, std::string> e{{"TUTTI_SOCKET_IFNAME", "lo"},
                                                                  {"TUTTI_TIMEOUT", std::to_string(kTimeoutSeconds)}};
                             if (std::string(c.net) == "socket") e["TUTTI_SHM_DISABLE"] = "1";
                             if (c.deviceBuffers) e["TUTTI_EMULATE_DEVICE"] = "1";
                             return e;
                           },
                           180);
  EXPECT_EQ(shrinkTrialStory(outcomes, trial), "");
}

INSTANTIATE_TEST_SUITE_P(Victims, Shrink,
                         ::testing::Values(Case{Victim::kKilled, "socket", false}, Case{Victim::kKilled, "shm", false},
                                           Case{Victim::kStopped, "socket", false},
                                           Case{Victim::kStopped, "shm", false},
                                           Case{Victim::kSilent, "socket", false}, Case{Victim::kSilent, "shm", false},
                                           Case{Victim::kKilled, "shm", true}),
                         [](const auto& info) {
                           return std::string(victimLabel(info.param.victim)) + "_" + info.param.net +
                                  (info.param.deviceBuffers ? "_device" : "");
                         });

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
    std::string err = checkEveryCall(grown, kOld - 1, kOld, false);
    tuttiCommDestroy(grown);
    return err;
  }
  RankContext old = ctx;
  old.nranks = kOld;
  tuttiComm_t comm = nullptr;
  if (std::string err = initComm(old, &comm); !err.empty()) return err;
  if (ctx.rank == kVictim) signalMeLater(Victim::kKilled, 200, kTimeoutSeconds);
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
  std::string err = checkEveryCall(grown, grownRank, kOld, false);
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
