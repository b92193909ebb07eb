// Ranks on several nodes: each node is a network namespace made by
// tests/multinode/netns.sh (ctest's fixture), joined by a bridge; inside a
// node ranks talk over shared memory, between nodes over TCP on data0. Every
// collective is checked element by element, with the algorithm the cost
// model picks and with rings and trees forced, on host buffers and on
// device buffers of the emulated device (P2P inside a node, mapped host
// slots between nodes, never the host reducer); TUTTI_SOCKET_IFNAME is checked
// to pick data0 by prefix, exact name and exclusion, and to fail clearly,
// naming the interface, when it names one the other nodes cannot reach.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/comm/cores/node_cores.h"
#include "src/common/number_ranges.h"
#include "tests/collectives/collective_cases.h"
#include "tests/harness/files.h"
#include "tests/harness/emulated_case_device.h"
#include "tests/harness/ranks.h"
#include "tests/harness/fault_trial.h"
#include "tests/harness/shrink_trial.h"

namespace tutti_test {
namespace {

const std::string kPrefix = "tutti-t";
constexpr int kFixtureNodes = 4;  // what the ctest fixture makes

std::string nodeNamespace(int node) { return kPrefix + "-n" + std::to_string(node); }

bool namespacesReady(int nodes) {
  struct stat st;
  return nodes <= kFixtureNodes && stat(("/var/run/netns/" + nodeNamespace(nodes - 1)).c_str(), &st) == 0;
}

#define SKIP_WITHOUT_NODES(n)                                                                    \
  if (!namespacesReady(n))                                                                       \
  GTEST_SKIP() << "network namespaces " << kPrefix << "-n0.." << (n) - 1                        \
               << " are not there (needs root; ctest's fixture runs tests/multinode/netns.sh up)"

struct Layout {
  int nodes;
  int perNode;
  const char* algo;  // TUTTI_ALGO: "" lets the cost model choose
};

// Rank r runs on node r % nodes: nodes' ranks are interleaved in rank order,
// so rings must reorder them to keep each node's ranks together.
RankEnv nodeEnv(int nodes, std::map<std::string, std::string> extra) {
  return [nodes, extra](int rank) {
    std::map<std::string, std::string> env{{"TUTTI_TEST_NETNS", nodeNamespace(rank % nodes)},
                                           {"TUTTI_SOCKET_IFNAME", "data"},
                                           {"TUTTI_TIMEOUT", "60"}};
    for (const auto& [k, v] : extra) env[k] = v;
    return env;
  };
}

std::vector<Case> matrix(int nranks, bool full) {
  std::vector<Case> cases;
  uint64_t seed = 7;
  std::vector<tuttiDataType_t> types{tuttiInt32, tuttiFloat32, tuttiBfloat16};
  if (full) types = {tuttiInt8, tuttiUint8, tuttiInt32, tuttiUint32, tuttiInt64, tuttiUint64,
                     tuttiFloat16, tuttiFloat32, tuttiFloat64, tuttiBfloat16};
  for (Coll coll : {Coll::kAllReduce, Coll::kReduce, Coll::kBroadcast, Coll::kReduceScatter,
                    Coll::kAllGather, Coll::kSendRecv, Coll::kAllToAll})
    for (tuttiDataType_t t : types)
      for (tuttiRedOp_t op : {tuttiSum, tuttiProd, tuttiMax, tuttiMin, tuttiAvg}) {
        bool reducing = coll == Coll::kAllReduce || coll == Coll::kReduce || coll == Coll::kReduceScatter;
        if (!reducing && op != tuttiSum) continue;
        // 32768: a one-shot slot's data exactly, at 4 bytes an element.
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1023), size_t(32768), size_t(65537)})
          for (bool inPlace : {false, true})
            cases.push_back({coll, t, op, count, inPlace, static_cast<int>((count + seed) % nranks), seed++});
      }
  return cases;
}

std::string runMatrix(const RankContext& ctx, bool full) {
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  std::string failures;
  int shown = 0;
  for (const Case& c : matrix(ctx.nranks, full)) {
    std::string f = runCase(comm, ctx.rank, ctx.nranks, c);
    if (f.empty()) continue;
    if (++shown <= 5) failures += f + "\n";
    if (f.find("returned") != std::string::npos) break;
  }
  tuttiCommDestroy(comm);
  return failures;
}

class MultiNode : public ::testing::TestWithParam<Layout> {};

TEST_P(MultiNode, EveryCollectiveMatchesTheReference) {
  const Layout l = GetParam();
  SKIP_WITHOUT_NODES(l.nodes);
  bool full = std::string(l.algo).empty();
  auto outcomes = runRanks(
      l.nodes * l.perNode, [full](const RankContext& ctx) { return runMatrix(ctx, full); },
      nodeEnv(l.nodes, {{"TUTTI_ALGO", l.algo}}), 600);
  EXPECT_EQ(summarize(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Nodes, MultiNode,
                         ::testing::Values(Layout{3, 2, ""}, Layout{4, 1, ""}, Layout{3, 2, "tree"},
                                           Layout{4, 1, "tree"}, Layout{3, 2, "ring"},
                                           Layout{3, 2, "allreduce:rd"}, Layout{4, 1, "allreduce:rd"},
                                           Layout{2, 2, "allreduce:rd"}, Layout{2, 2, "allreduce:twolevel"},
                                           Layout{3, 2, "allreduce:twolevel"}, Layout{2, 2, "allreduce:hd"},
                                           Layout{4, 1, "allreduce:hd"}, Layout{3, 2, "allreduce:hd"}),
                         [](const auto& info) {
                           std::string algo = info.param.algo;
                           for (char& ch : algo)
                             if (ch == ':') ch = '_';
                           return std::to_string(info.param.nodes) + "nodes_x" +
                                  std::to_string(info.param.perNode) + "_" +
                                  (algo.empty() ? "tuned" : algo);
                         });

// Calls large enough that halving-doubling pipelines (twoLevelSegments):
// 2 and 8 segments of uneven length, shared memory inside the nodes and
// sockets across, every element checked.
TEST(MultiNodePipelined, HalvingDoublingLargeCallsMatchTheReference) {
  SKIP_WITHOUT_NODES(3);
  for (int nodes : {2, 3}) {
    auto body = [](const RankContext& ctx) {
      tuttiComm_t comm = nullptr;
      std::string failures = initComm(ctx, &comm);
      if (!failures.empty()) return failures;
      uint64_t seed = 11;
      for (size_t count : {(size_t(1) << 20) + 4099, (size_t(4) << 20) + 17})
        for (auto [type, op] : {std::pair{tuttiFloat32, tuttiSum}, {tuttiInt32, tuttiMax}, {tuttiFloat32, tuttiAvg}})
          for (bool inPlace : {false, true})
            failures += runCase(comm, ctx.rank, ctx.nranks, {Coll::kAllReduce, type, op, count, inPlace, 0, seed++});
      tuttiCommDestroy(comm);
      return failures;
    };
    EXPECT_EQ(summarize(runRanks(nodes * 2, body, nodeEnv(nodes, {{"TUTTI_ALGO", "allreduce:hd"}}), 600)), "")
        << nodes << " nodes x 2";
  }
}

#ifdef TUTTI_HAVE_UCX
// Between nodes over UCX, on the data interfaces only (UCX_NET_DEVICES);
// ranks of one node still share memory.
TEST(MultiNodeUcx, EveryCollectiveOverUcxTcpOnTheDataInterface) {
  SKIP_WITHOUT_NODES(3);
  auto outcomes = runRanks(
      6, [](const RankContext& ctx) { return runMatrix(ctx, false); },
      nodeEnv(3, {{"TUTTI_NET", "ucx"}, {"UCX_TLS", "tcp"}, {"UCX_NET_DEVICES", "data0"}}), 600);
  EXPECT_EQ(summarize(outcomes), "");
}
#endif

// Device buffers on the emulated device, two ranks per node: P2P between
// the ranks of a node, the network (its slots mapped into the device)
// between nodes, in the same rings and trees; every collective, dtype and op
// in and out of place at odd counts, then a 64 MiB all-reduce and an
// all-gather and reduce-scatter of as much, each checked element by element
// and by which memory the device's operations touched.
struct DeviceLayout {
  int nodes;
  const char* net;  // TUTTI_NET
};

std::string runDeviceMatrix(const RankContext& ctx) {
  processDevice();  // installed before tutti looks for a device
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  const Tally before = Tally::now();  // init takes the gates' page-locked word
  EmulatedCaseDevice dev(processDevice());
  err = runEveryCase(comm, ctx.rank, ctx.nranks, {0, 1, 7, 1031, 65537}, &dev, 11);
  if (err.empty()) err = runLargeCases(comm, ctx.rank, ctx.nranks, &dev);
  tuttiCommDestroy(comm);
  if (!err.empty()) return err;
  return checkRoute({/*p2p=*/true, /*mappedHost=*/true}, ctx.nranks, before);
}

class MultiNodeDevice : public ::testing::TestWithParam<DeviceLayout> {};

TEST_P(MultiNodeDevice, EveryCollectiveOnDeviceBuffersP2pInsideNetworkBetween) {
  const DeviceLayout l = GetParam();
  SKIP_WITHOUT_NODES(l.nodes);
  std::map<std::string, std::string> env{{"TUTTI_NET", l.net}, {"TUTTI_P2P_BUFFSIZE", "262144"}};
  if (std::string(l.net) == "ucx") {
    env["UCX_TLS"] = "tcp";
    env["UCX_NET_DEVICES"] = "data0";
  }
  auto outcomes = runRanks(2 * l.nodes, runDeviceMatrix, nodeEnv(l.nodes, env), 800);
  EXPECT_EQ(summarize(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Nodes, MultiNodeDevice,
                         ::testing::Values(DeviceLayout{2, "socket"}, DeviceLayout{3, "socket"}
#ifdef TUTTI_HAVE_UCX
                                           ,
                                           DeviceLayout{2, "ucx"}, DeviceLayout{3, "ucx"}
#endif
                                           ),
                         [](const auto& info) {
                           return std::to_string(info.param.nodes) + "nodes_x2_" + info.param.net;
                         });

// One all-reduce, checked; the log must show the interface init chose.
TEST(MultiNodeInterfaces, PrefixExactAndExclusionChooseData0) {
  SKIP_WITHOUT_NODES(3);
  TempDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  const std::string dir = scratch.path;
  for (const char* spec : {"data", "=data0", "^side,lo"}) {
    std::string log = dir + "/log.%p";
    auto outcomes = runRanks(
        3,
        [dir](const RankContext& ctx) -> std::string {
          std::string f;
          tuttiComm_t comm = nullptr;
          std::string err = initComm(ctx, &comm);
          if (!err.empty()) return err;
          Case c{Coll::kAllReduce, tuttiFloat32, tuttiSum, 1000, false, 0, 99};
          f += runCase(comm, ctx.rank, ctx.nranks, c);
          tuttiCommDestroy(comm);
          std::string text = slurp(dir + "/log." + std::to_string(getpid()));
          if (text.find("interface data0 (10.77.0.") == std::string::npos)
            f += "the log does not show interface data0: " + text.substr(0, 300);
          return f;
        },
        nodeEnv(3, {{"TUTTI_SOCKET_IFNAME", spec}, {"TUTTI_DEBUG", "INFO"}, {"TUTTI_DEBUG_FILE", log}}),
        300);
    EXPECT_EQ(summarize(outcomes), "") << "TUTTI_SOCKET_IFNAME=" << spec;
  }
}

// Two nodes of two ranks: init measures the links (inside and between
// nodes, positive latencies and rates in the INIT log) and times an
// all-reduce per algorithm; every call then logs its time beside the
// model's prediction (TUNING). TUTTI_MEASURE_LINKS=0 measures nothing.
TEST(MultiNodeTuning, LinksAreMeasuredAtInitAndCallsLogTimeBesidePrediction) {
  SKIP_WITHOUT_NODES(2);
  TempDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  const std::string dir = scratch.path;
  for (const char* measure : {"1", "0"}) {
    std::string log = dir + "/log.%p";
    auto outcomes = runRanks(
        4,
        [dir, measure](const RankContext& ctx) -> std::string {
          tuttiComm_t comm = nullptr;
          std::string err = initComm(ctx, &comm);
          if (!err.empty()) return err;
          std::string f;
          for (size_t count : {size_t(2), size_t(1) << 18})
            f += runCase(comm, ctx.rank, ctx.nranks, {Coll::kAllReduce, tuttiFloat32, tuttiSum, count, false, 0, 5});
          tuttiCommDestroy(comm);
          const std::string text = slurp(dir + "/log." + std::to_string(getpid()));
          const size_t at = text.find("links measured with every rank busy: inside nodes ");
          if (std::string(measure) == "0") {
            if (at != std::string::npos) f += "TUTTI_MEASURE_LINKS=0 measured the links";
            return f;
          }
          if (at == std::string::npos) return f + "no links measured in the log: " + text.substr(0, 400);
          double intraUs = 0, intraGBs = 0, netUs = 0, netGBs = 0;
          if (sscanf(text.c_str() + at, "links measured with every rank busy: inside nodes %lf us, %lf GB/s a stream; "
                                        "between nodes %lf us, %lf GB/s",
                     &intraUs, &intraGBs, &netUs, &netGBs) != 4 ||
              !(intraUs > 0 && intraGBs > 0 && netUs > 0 && netGBs > 0))
            f += "the measured figures are not all positive: " + text.substr(at, 200);
          if (text.find("all-reduce measured over predicted by ring 8 B") == std::string::npos)
            f += "no all-reduce calibration in the log; ";
          const size_t draws = text.find(", slow draws ", at);
          double own = 0;
          if (draws == std::string::npos || sscanf(text.c_str() + draws, ", slow draws %lfx", &own) != 1 || own < 1)
            f += "no algorithm's own slow draws (at least 1x) in the calibration; ";
          if (text.find(" took ") == std::string::npos || text.find("us (predicted ") == std::string::npos)
            f += "no call logged its time beside the prediction; ";
          return f;
        },
        [&](int rank) {
          auto env = nodeEnv(2, {{"TUTTI_DEBUG", "INFO"}, {"TUTTI_DEBUG_SUBSYS", "INIT,TUNING"},
                                 {"TUTTI_DEBUG_FILE", log}, {"TUTTI_MEASURE_LINKS", measure}})(rank);
          return env;
        },
        300);
    EXPECT_EQ(summarize(outcomes), "") << "TUTTI_MEASURE_LINKS=" << measure;
  }
}

std::string coreList(const std::vector<int>& cores) { return "{" + tutti::numberRanges(cores, ",") + "}"; }

// 4 ranks of nodes on one kernel: where they outnumber its cores, each node
// takes its share in node order (2 nodes of 2 ranks: node 0 the first half
// of the cores; 4 nodes of 1 rank on 2 cores: nodes 0-1 the first core), its
// ranks bound there, and calls run as before; with a core for every rank,
// or TUTTI_NODE_CORES=0, nothing is bound.
TEST(MultiNodeCores, NodesSharingTheKernelsCoresTakeAShareEach) {
  SKIP_WITHOUT_NODES(4);
  for (int nodes : {2, 4}) {
    for (const char* setting : {"1", "0"}) {
      auto outcomes = runRanks(
          4,
          [setting, nodes](const RankContext& ctx) -> std::string {
            const std::vector<int> before = tutti::threadCores();
            tuttiComm_t comm = nullptr;
            std::string err = initComm(ctx, &comm);
            if (!err.empty()) return err;
            const std::vector<int> after = tutti::threadCores();
            std::string f =
                runCase(comm, ctx.rank, ctx.nranks, {Coll::kAllReduce, tuttiFloat32, tuttiSum, 1 << 16, false, 0, 3});
            tuttiCommDestroy(comm);
            const size_t c = before.size(), node = ctx.rank % nodes;  // nodeEnv: rank r on node r % nodes
            std::vector<int> want = before;
            if (std::string(setting) == "1" && nodes == 2 && c >= 2 && c < 4)
              want = node == 0 ? std::vector<int>(before.begin(), before.begin() + c / 2)
                               : std::vector<int>(before.begin() + c / 2, before.end());
            if (std::string(setting) == "1" && nodes == 4 && c == 2) want = {before[node / 2]};
            if (after != want)
              f += "rank " + std::to_string(ctx.rank) + " (node " + std::to_string(node) + " of " +
                   std::to_string(nodes) + ", TUTTI_NODE_CORES=" + setting + ") runs on cores " + coreList(after) +
                   " after init, " + coreList(before) + " before; want " + coreList(want);
            return f;
          },
          nodeEnv(nodes, {{"TUTTI_NODE_CORES", setting}}), 300);
      EXPECT_EQ(summarize(outcomes), "") << nodes << " nodes, TUTTI_NODE_CORES=" << setting;
    }
  }
}

TEST(MultiNodeInterfaces, UnreachableInterfaceFailsNamingItWithinTheTimeout) {
  SKIP_WITHOUT_NODES(3);
  auto start = std::chrono::steady_clock::now();
  auto outcomes = runRanks(
      3,
      [](const RankContext& ctx) -> std::string {
        tuttiComm_t comm = nullptr;
        std::string err = initComm(ctx, &comm);
        if (err.empty()) {
          tuttiCommDestroy(comm);
          return "init succeeded over an interface that reaches no other node";
        }
        if (err.find("side0") == std::string::npos) return "the error does not name side0: " + err;
        return "";
      },
      nodeEnv(3, {{"TUTTI_SOCKET_IFNAME", "side"}, {"TUTTI_TIMEOUT", "5"}}), 60);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(summarize(outcomes), "");
  EXPECT_LT(seconds, 30) << "ranks must give up within the timeout, not hang";
}

// A rank stopped on one node: the ranks of other nodes learn that it is
// stopped, and what it last entered, from its node-mate's progress service.
TEST(MultiNodeHang, RanksOfOtherNodesNameTheStoppedRank) {
  SKIP_WITHOUT_NODES(3);
  const FaultTrial trial{Fault::kStop, 4, 200, 12345, 4};  // rank 4 runs on node 1, beside rank 1
  auto outcomes = runRanks(6, [trial](const RankContext& ctx) { return runFaultTrialRank(ctx, trial); },
                           nodeEnv(3, {{"TUTTI_TIMEOUT", std::to_string(trial.timeoutSeconds)}}), 120);
  EXPECT_EQ(faultTrialStory(outcomes, trial), "");
}

// A rank killed on one node: the survivors of both nodes exclude the rank
// tutti named, shrink, and check every call of the new communicator, on
// host buffers and on device buffers of the emulated device.
class MultiNodeShrink : public ::testing::TestWithParam<bool> {};

TEST_P(MultiNodeShrink, SurvivorsOnBothNodesGoOnWithoutAKilledRank) {
  SKIP_WITHOUT_NODES(2);
  const bool device = GetParam();
  // Rank 3 runs on node 1, beside rank 1.
  const ShrinkTrial trial{Victim::kKilled, 3, 5, device, /*holdsWhatAFreshOneHolds=*/false};
  std::map<std::string, std::string> env{{"TUTTI_TIMEOUT", std::to_string(trial.timeoutSeconds)}};
  if (device) env["TUTTI_EMULATE_DEVICE"] = "1";
  auto outcomes =
      runRanks(4, [trial](const RankContext& ctx) { return runShrinkRank(ctx, trial); }, nodeEnv(2, env), 300);
  EXPECT_EQ(shrinkTrialStory(outcomes, trial), "");
}

INSTANTIATE_TEST_SUITE_P(Buffers, MultiNodeShrink, ::testing::Values(false, true),
                         [](const auto& info) { return std::string(info.param ? "device" : "host"); });

}  // namespace
}  // namespace tutti_test
