// Every collective, dtype and op, over rank counts {1,2,3,4,5,8}, counts
// {0,1,2,7,1023,2^20+3} and one of 64 MiB, in place and out of place, with
// roots other than 0: over shared memory only and sockets only. A mix (ranks
// grouped two per fake host, so pairs inside a host use shm, others TCP) and
// UCX alone (UCX_TLS=tcp, and sm,self) run every collective, count and
// placement with one dtype of each element width and two ops: a transport
// moves bytes, and the reductions, the executor's, are checked in full above.
// TUTTI_TEST_MATRIX=widths asks the same of any mode (AddressSanitizer's
// stage: the reducers' kernels are the unit tests'); TUTTI_TEST_MATRIX=threads
// keeps two dtypes and no 64 MiB call (ThreadSanitizer's stage looks at what
// threads do, which neither changes, and runs the whole matrix 10x slower).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/collectives/collective_cases.h"
#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

enum class Mode { kShm, kSocket, kMixed, kUcxTcp, kUcxSm };

struct Param {
  Mode mode;
  int nranks;
};

std::string modeName(Mode m) {
  switch (m) {
    case Mode::kShm: return "shm";
    case Mode::kSocket: return "socket";
    case Mode::kMixed: return "mixed";
    case Mode::kUcxTcp: return "ucx_tcp";
    case Mode::kUcxSm: return "ucx_sm";
  }
  return "";
}

RankEnv envFor(Mode mode) {
  return [mode](int rank) {
    std::map<std::string, std::string> env{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "60"}};
    if (mode == Mode::kSocket) env["TUTTI_SHM_DISABLE"] = "1";
    if (mode == Mode::kMixed) env["TUTTI_HOSTID"] = "node" + std::to_string(rank / 2);
    if (mode == Mode::kUcxTcp || mode == Mode::kUcxSm) {  // every pair over UCX
      env["TUTTI_NET"] = "ucx";
      env["TUTTI_SHM_DISABLE"] = "1";
      env["UCX_TLS"] = mode == Mode::kUcxTcp ? "tcp" : "sm,self";
      env["UCX_NET_DEVICES"] = "lo";
    }
    return env;
  };
}

const tuttiDataType_t kTypes[] = {tuttiInt8,   tuttiUint8,   tuttiInt32,   tuttiUint32,
                                  tuttiInt64,  tuttiUint64,  tuttiFloat16, tuttiFloat32,
                                  tuttiFloat64, tuttiBfloat16};
const tuttiRedOp_t kOps[] = {tuttiSum, tuttiProd, tuttiMax, tuttiMin, tuttiAvg};
const size_t kSmallCounts[] = {0, 1, 2, 7, 1023};
constexpr size_t kLargeCount = (1u << 20) + 3;
constexpr size_t kHugeBytes = (64u << 20) + 4096;  // at least 64 MiB per buffer

// How much of the dtype and op matrix a mode runs.
enum class Breadth { kEvery, kWidths, kThreads };

// One dtype of each element width, two of them, and two reductions, one with a final division.
const tuttiDataType_t kWidthTypes[] = {tuttiInt8, tuttiFloat16, tuttiFloat32, tuttiFloat64};
const tuttiDataType_t kThreadTypes[] = {tuttiFloat32, tuttiFloat16};
const tuttiRedOp_t kFewOps[] = {tuttiSum, tuttiAvg};

Breadth breadthFor(Mode mode) {
  const char* v = std::getenv("TUTTI_TEST_MATRIX");
  if (v != nullptr && std::strcmp(v, "threads") == 0) return Breadth::kThreads;
  if (v != nullptr && std::strcmp(v, "widths") == 0) return Breadth::kWidths;
  return mode == Mode::kShm || mode == Mode::kSocket ? Breadth::kEvery : Breadth::kWidths;
}

bool reducing(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter;
}

// The cases one group of ranks runs, all on one communicator.
std::vector<Case> matrix(const Param& p) {
  std::vector<Case> cases;
  uint64_t seed = 1;
  const Coll colls[] = {Coll::kAllReduce, Coll::kReduce,   Coll::kReduceScatter, Coll::kAllGather,
                        Coll::kBroadcast, Coll::kSendRecv, Coll::kAllToAll};
  const Breadth breadth = breadthFor(p.mode);
  std::vector<tuttiDataType_t> types(std::begin(kTypes), std::end(kTypes));
  std::vector<tuttiRedOp_t> ops(std::begin(kOps), std::end(kOps));
  if (breadth == Breadth::kWidths) types.assign(std::begin(kWidthTypes), std::end(kWidthTypes));
  if (breadth == Breadth::kThreads) types.assign(std::begin(kThreadTypes), std::end(kThreadTypes));
  if (breadth != Breadth::kEvery) ops.assign(std::begin(kFewOps), std::end(kFewOps));
  for (Coll coll : colls) {
    for (tuttiDataType_t t : types) {
      for (tuttiRedOp_t op : ops) {
        if (!reducing(coll) && op != tuttiSum) continue;
        std::vector<size_t> counts(std::begin(kSmallCounts), std::end(kSmallCounts));
        // The 2^20+3 count with every dtype and op; per-rank counts shrink with
        // the rank count so each case moves about the same bytes.
        size_t large = coll == Coll::kAllGather || coll == Coll::kReduceScatter || coll == Coll::kAllToAll
                           ? kLargeCount / p.nranks + 1
                           : kLargeCount;
        counts.push_back(large);
        for (size_t count : counts)
          for (bool inPlace : {false, true}) {
            int root = static_cast<int>((count + t + seed) % p.nranks);
            cases.push_back({coll, t, op, count, inPlace, root, seed++});
          }
      }
    }
  }
  // At least 64 MiB in one call (not for ThreadSanitizer: the 2^20+3 count
  // already runs chunks through every thread, and 64 MiB took it minutes).
  if (breadth == Breadth::kThreads) return cases;
  size_t huge = kHugeBytes / 4;
  cases.push_back({Coll::kAllReduce, tuttiFloat32, tuttiSum, huge, false, 0, seed++});
  cases.push_back({Coll::kAllReduce, tuttiFloat32, tuttiSum, huge, true, 0, seed++});
  cases.push_back({Coll::kBroadcast, tuttiFloat32, tuttiSum, huge, false, p.nranks - 1, seed++});
  cases.push_back({Coll::kAllGather, tuttiFloat32, tuttiSum, huge / p.nranks + 1, false, 0, seed++});
  return cases;
}

class Collectives : public ::testing::TestWithParam<Param> {};

TEST_P(Collectives, MatchReference) {
  const Param p = GetParam();
  auto outcomes = runRanks(
      p.nranks,
      [p](const RankContext& ctx) -> std::string {
        tuttiComm_t comm = nullptr;
        std::string err = initComm(ctx, &comm);
        if (!err.empty()) return err;
        std::string failures;
        int shown = 0;
        for (const Case& c : matrix(p)) {
          std::string f = runCase(comm, ctx.rank, ctx.nranks, c);
          if (f.empty()) continue;
          if (++shown <= 5) failures += f + "\n";
          if (f.find("returned") != std::string::npos) break;  // the comm is unusable now
        }
        tuttiCommDestroy(comm);
        return failures;
      },
      envFor(p.mode), 900);
  EXPECT_EQ(summarize(outcomes), "");
}

std::vector<Param> params() {
  std::vector<Param> out;
  std::vector<Mode> modes = {Mode::kShm, Mode::kSocket, Mode::kMixed};
#ifdef TUTTI_HAVE_UCX
  modes.push_back(Mode::kUcxTcp);
  modes.push_back(Mode::kUcxSm);
#endif
  for (Mode m : modes)
    for (int n : {1, 2, 3, 4, 5, 8}) {
      if (m != Mode::kShm && n == 1) continue;  // one rank has no peers
      if (m == Mode::kMixed && n < 3) continue;  // needs two hosts with someone on each
      out.push_back({m, n});
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, Collectives, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return modeName(info.param.mode) + "_" + std::to_string(info.param.nranks) + "ranks";
                         });

}  // namespace
}  // namespace tutti_test
