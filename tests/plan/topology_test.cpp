// Topology graphs (detection, JSON round trip, a synthetic machine), node
// layouts and their rings, double binary trees, and the cost model's choices,
// all on synthetic inputs so they hold on any machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/plan/algorithms.h"
#include "src/plan/layout.h"
#include "src/plan/planner.h"
#include "src/plan/tree.h"
#include "src/plan/tuner.h"
#include "src/topo/nic_affinity.h"
#include "src/common/json.h"
#include "src/topo/topology.h"

namespace tutti {
namespace {

const std::string kSynthetic = std::string(TUTTI_TEST_DATA) + "/synthetic_2numa_8gpu_4nic.json";

TEST(Topology, DetectsThisMachine) {
  std::vector<std::string> notes;
  TopoGraph g = detectTopology(&notes);
  EXPECT_GE(g.count(TopoKind::kPackage), 1);
  EXPECT_GE(g.count(TopoKind::kNuma), 1);
  for (const TopoNode* nic : g.ofKind(TopoKind::kNic)) {
    EXPECT_FALSE(nic->addresses.empty()) << nic->name;
    // Every NIC hangs off the CPU side somewhere.
    EXPECT_GT(g.pathBandwidth(nic->id, "machine"), 0) << nic->name;
  }
}

TEST(Topology, JsonRoundTrip) {
  auto g = readTopologyFile(kSynthetic);
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto again = TopoGraph::fromJson(parseJson(g->toJson().dump()).value());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->toJson().dump(), g->toJson().dump());
}

bool readFromCache(const std::vector<std::string>& notes) {
  return std::any_of(notes.begin(), notes.end(), [](const std::string& n) { return n.rfind("read from", 0) == 0; });
}

// The first process of a host probes, the next reads its file; a broken
// file is probed again and replaced.
TEST(TopologyCache, TheFirstProbesTheNextReadsABrokenFileIsReplaced) {
  char dir[] = "/tmp/tutti-topo-cache-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::vector<std::string> first, second, third;
  const std::string probed = detectTopologyOncePerHost(dir, &first).toJson().dump();
  EXPECT_FALSE(readFromCache(first));
  const std::string file = std::string(dir) + "/" + topologyCacheKey();
  EXPECT_EQ(access(file.c_str(), R_OK), 0) << file;
  EXPECT_EQ(detectTopologyOncePerHost(dir, &second).toJson().dump(), probed);
  EXPECT_TRUE(readFromCache(second));
  std::ofstream(file) << "{ not json";
  EXPECT_EQ(detectTopologyOncePerHost(dir, &third).toJson().dump(), probed);
  EXPECT_FALSE(readFromCache(third));
  EXPECT_TRUE(readTopologyFile(file).ok());
  std::system(("rm -rf " + std::string(dir)).c_str());
}

// However many configurations a host meets, a user's cache holds at most
// kTopologyCacheFiles files, the newest kept.
TEST(TopologyCache, KeepsAtMostEightFilesOfAUser) {
  char dir[] = "/tmp/tutti-topo-cache-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string mine = "tutti-topo-" + std::to_string(getuid()) + "-";
  for (int i = 0; i < 12; ++i) {
    const std::string other = std::string(dir) + "/" + mine + "00000000000000" + std::to_string(10 + i) + ".json";
    std::ofstream(other) << "{}";
    std::ofstream(other + ".lock");
  }
  detectTopologyOncePerHost(dir);
  int files = 0, locks = 0;
  bool own = false;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(mine, 0) != 0) continue;
      files += name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
      locks += name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0;
      own = own || name == topologyCacheKey();
    }
    closedir(d);
  }
  EXPECT_TRUE(own) << "the probe's own file";
  EXPECT_EQ(files, kTopologyCacheFiles);
  EXPECT_EQ(locks, kTopologyCacheFiles);
  std::system(("rm -rf " + std::string(dir)).c_str());
}

// The cache goes where a user's caches belong, never /dev/shm: TUTTI_CACHE_DIR,
// else XDG_RUNTIME_DIR/tutti, else XDG_CACHE_HOME/tutti (or ~/.cache/tutti).
// In a child: the environment is changed.
TEST(TopologyCache, LivesInTheUsersDirectories) {
  char dir[] = "/tmp/tutti-topo-home-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string base = dir;
  pid_t pid = fork();
  if (pid == 0) {
    auto expect = [](const std::string& want, int code) {
      if (topologyCacheDir() != want) {
        fprintf(stderr, "cache dir %s, expected %s\n", topologyCacheDir().c_str(), want.c_str());
        _exit(code);
      }
    };
    unsetenv("TUTTI_CACHE_DIR");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", base.c_str(), 1);
    setenv("XDG_RUNTIME_DIR", (base + "/run").c_str(), 1);
    mkdir((base + "/run").c_str(), 0700);
    expect(base + "/run/tutti", 10);
    unsetenv("XDG_RUNTIME_DIR");
    expect(base + "/.cache/tutti", 11);
    setenv("XDG_CACHE_HOME", (base + "/cache").c_str(), 1);
    mkdir((base + "/cache").c_str(), 0700);
    expect(base + "/cache/tutti", 12);
    setenv("TUTTI_CACHE_DIR", (base + "/chosen").c_str(), 1);
    expect(base + "/chosen", 13);
    // What a communicator does: the probe lands there, not in /dev/shm.
    const std::string inShm = "/dev/shm/" + topologyCacheKey();
    unlink(inShm.c_str());
    if (!loadTopology().ok()) _exit(14);
    if (access((base + "/chosen/" + topologyCacheKey()).c_str(), R_OK) != 0) _exit(15);
    if (access(inShm.c_str(), F_OK) == 0) _exit(16);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10-13: the wrong directory; 14: no topology; 15: no file in the chosen "
                                       "directory; 16: a file in /dev/shm";
  std::system(("rm -rf " + base).c_str());
}

// Processes that start together probe once: the others wait on the lock.
TEST(TopologyCache, ProcessesStartingTogetherProbeOnce) {
  char dir[] = "/tmp/tutti-topo-cache-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      std::vector<std::string> notes;
      detectTopologyOncePerHost(dir, &notes);
      _exit(readFromCache(notes) ? 0 : 1);  // 1: this one probed
    }
    children.push_back(pid);
  }
  int probed = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    probed += WEXITSTATUS(status);
  }
  EXPECT_EQ(probed, 1);
  std::system(("rm -rf " + std::string(dir)).c_str());
}

TEST(Topology, SyntheticMachine) {
  auto g = readTopologyFile(kSynthetic);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->count(TopoKind::kNuma), 2);
  EXPECT_EQ(g->count(TopoKind::kGpu), 8);
  EXPECT_EQ(g->count(TopoKind::kNic), 4);
  // GPU to GPU over NVSwitch beats any PCI path; GPU to its own NIC is PCI,
  // to a NIC on the other socket crosses the inter-socket link.
  EXPECT_DOUBLE_EQ(g->pathBandwidth("gpu0", "gpu7"), 450);
  EXPECT_DOUBLE_EQ(g->pathBandwidth("gpu0", "nic:ib0"), 24);
  TopoGraph cpuOnly;
  for (const auto& n : g->nodes())
    if (n.kind != TopoKind::kGpu) cpuOnly.add(n);
  for (const auto& l : g->links())
    if (l.kind != LinkKind::kNvlink && cpuOnly.find(l.a) && cpuOnly.find(l.b))
      cpuOnly.link(l.a, l.b, l.kind, l.bandwidthGBs);
  EXPECT_DOUBLE_EQ(cpuOnly.pathBandwidth("nic:ib0", "nic:ib3"), 20);
}

TEST(Topology, BadFilesSayWhatIsWrong) {
  auto bad = parseJson("{\"nodes\": [ {\"id\": \"x\", \"kind\": \"toaster\"} ]}");
  ASSERT_TRUE(bad.ok());
  auto g = TopoGraph::fromJson(bad.value());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("toaster"), std::string::npos);
  auto syntax = parseJson("{\"nodes\": [\n  {\"id\" \"x\"} ]}");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("line 2"), std::string::npos) << syntax.status().message();
  EXPECT_FALSE(readTopologyFile("/nonexistent/topo.json").ok());
}

TEST(Layout, GroupsRanksByNode) {
  NodeLayout l = NodeLayout::uniform(3, 2, true, 1, 10, 4);  // rank r on node r % 3
  EXPECT_EQ(l.nnodes(), 3);
  EXPECT_EQ(l.ranksOf(0), (std::vector<int>{0, 3}));
  EXPECT_EQ(l.nodeOf(4), 1);
  EXPECT_EQ(l.localIndex(4), 1);
}

// Every rank exactly once; with nodes kept together, exactly one entry and
// one exit per node; channels leave each node through different ranks.
TEST(Layout, RingsVisitEveryRankOnceAndCrossEachNodeOnce) {
  for (int nodes : {1, 2, 3, 5})
    for (int perNode : {1, 2, 4})
      for (bool interleaved : {false, true}) {
        NodeLayout l = NodeLayout::uniform(nodes, perNode, interleaved, 2, 10, 8);
        std::set<int> exits;
        for (int c = 0; c < 4; ++c) {
          std::vector<int> ring = l.ring(c, RingOrder::kTopo);
          std::vector<int> sorted = ring;
          std::sort(sorted.begin(), sorted.end());
          for (int r = 0; r < l.nranks(); ++r) ASSERT_EQ(sorted[r], r);
          EXPECT_EQ(l.crossings(ring), nodes > 1 ? nodes : 0);
          for (size_t i = 0; i < ring.size(); ++i) {
            if (l.nodeOf(ring[i]) != l.nodeOf(ring[(i + 1) % ring.size()]) && l.nodeOf(ring[i]) == 0)
              exits.insert(ring[i]);
          }
        }
        if (nodes > 1) {
          EXPECT_EQ(static_cast<int>(exits.size()), std::min(perNode, 4));
        }
        if (interleaved && nodes > 1 && perNode > 1) {
          EXPECT_EQ(l.crossings(l.ring(0, RingOrder::kRank)), l.nranks());
        }
      }
}

TEST(Tree, DoubleBinaryTreesAreTreesWithDisjointInteriors) {
  for (int k = 1; k <= 64; ++k) {
    NodeTree t[2] = {buildNodeTree(k, 0), buildNodeTree(k, 1)};
    for (const NodeTree& tree : t) {
      int roots = 0;
      for (int n = 0; n < k; ++n) {
        roots += tree.parent[n] < 0;
        EXPECT_LE(tree.children[n].size(), 2u);
        // Following parents reaches the root: no cycles, connected.
        int steps = 0, p = n;
        while (tree.parent[p] >= 0 && steps <= k) p = tree.parent[p], ++steps;
        EXPECT_EQ(p, tree.root) << "k " << k << " node " << n;
      }
      EXPECT_EQ(roots, 1);
      EXPECT_LE(treeDepth(tree), static_cast<int>(std::ceil(std::log2(k + 1))) + 1) << k;
    }
    for (int n = 0; n < k; ++n)
      EXPECT_FALSE(!t[0].children[n].empty() && !t[1].children[n].empty())
          << "node " << n << " is interior in both trees of " << k;
  }
}

TEST(Tree, RankTreesUseChainsInsideNodesAndHeadsBetween) {
  for (int which = 0; which < 2; ++which)
    for (int root : {-1, 0, 5}) {
      NodeLayout l = NodeLayout::uniform(4, 3, true, 1, 10, 8);
      int roots = 0;
      for (int r = 0; r < l.nranks(); ++r) {
        TreeNeighbors t = rankTreeNeighbors(l, which, root, r);
        if (t.parent < 0) {
          ++roots;
          if (root >= 0) {
            EXPECT_EQ(r, root);
          }
        }
        for (int c : t.children) {
          TreeNeighbors ct = rankTreeNeighbors(l, which, root, c);
          EXPECT_EQ(ct.parent, r) << "child " << c << " of " << r;
        }
        EXPECT_LE(t.children.size(), 3u);
      }
      EXPECT_EQ(roots, 1);
      // Each node has one head: the only rank whose parent is elsewhere (or none).
      for (int node = 0; node < l.nnodes(); ++node) {
        int heads = 0;
        for (int r : l.ranksOf(node)) {
          int p = rankTreeNeighbors(l, which, root, r).parent;
          heads += p < 0 || l.nodeOf(p) != node;
        }
        EXPECT_EQ(heads, 1) << "node " << node;
      }
    }
}

TEST(Tuner, ParsesNcclAlgoGrammar) {
  auto all = AlgoFilter::parse("");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->allows(Collective::kAllReduce, Algorithm::kTree));
  auto ring = AlgoFilter::parse("Ring");
  ASSERT_TRUE(ring.ok());
  EXPECT_FALSE(ring->allows(Collective::kAllReduce, Algorithm::kTree));
  auto notTree = AlgoFilter::parse("^TREE");
  ASSERT_TRUE(notTree.ok());
  EXPECT_TRUE(notTree->allows(Collective::kBroadcast, Algorithm::kRing));
  EXPECT_FALSE(notTree->allows(Collective::kBroadcast, Algorithm::kTree));
  auto per = AlgoFilter::parse("allreduce:tree;broadcast:ring");
  ASSERT_TRUE(per.ok()) << per.status().message();
  EXPECT_FALSE(per->allows(Collective::kAllReduce, Algorithm::kRing));
  EXPECT_FALSE(per->allows(Collective::kBroadcast, Algorithm::kTree));
  EXPECT_TRUE(per->allows(Collective::kReduce, Algorithm::kTree));
  auto unknown = AlgoFilter::parse("ring,collnet");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("collnet"), std::string::npos);
  EXPECT_FALSE(AlgoFilter::parse("^ring,tree,oneshot,rd,twolevel,hd").ok());  // nothing left
  auto rd = AlgoFilter::parse("allreduce:rd");
  ASSERT_TRUE(rd.ok()) << rd.status().message();
  EXPECT_TRUE(rd->allows(Collective::kAllReduce, Algorithm::kRecursiveDoubling));
  EXPECT_FALSE(rd->allows(Collective::kAllReduce, Algorithm::kRing));
  auto oneShot = AlgoFilter::parse("^ring,tree");
  ASSERT_TRUE(oneShot.ok());
  EXPECT_TRUE(oneShot->allows(Collective::kAllReduce, Algorithm::kOneShot));
  EXPECT_FALSE(AlgoFilter::parse("gather:ring").ok());
}

TuneContext contextFor(int nodes, int perNode, float gbps = 100) {
  NodeLayout l = NodeLayout::uniform(nodes, perNode, false, 1, gbps, perNode * 2);
  return TuneContext::fromLayout(l, l.ring(0, RingOrder::kTopo), 4, false, 128 << 10);
}

TEST(Tuner, TreesForSmallMessagesAcrossManyNodesRingsForLarge) {
  for (int nodes : {4, 8, 16, 64})
    for (int perNode : {1, 4}) {
      TuneContext ctx = contextFor(nodes, perNode);
      // Up to kOneShotMaxRanks ranks, one hop (or log2 n rounds of one) beats
      // a tree's depth for an all-reduce; a root that sends to or receives
      // from every rank may not.
      const bool few = nodes * perNode <= kOneShotMaxRanks;
      const Algorithm small = tune(ctx, Collective::kAllReduce, 1 << 10).algorithm;
      if (few)
        EXPECT_TRUE(small == Algorithm::kOneShot || small == Algorithm::kRecursiveDoubling) << algorithmName(small);
      else
        EXPECT_EQ(small, Algorithm::kTree);
      for (Collective c : {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce}) {
        const Algorithm a = tune(ctx, c, 8).algorithm;
        if (few) {
          EXPECT_NE(a, Algorithm::kRing) << collectiveName(c) << " " << nodes << "x" << perNode;
        } else {
          EXPECT_EQ(a, Algorithm::kTree) << collectiveName(c) << " " << nodes << "x" << perNode;
        }
        // Device buffers have no one-shot.
        EXPECT_EQ(tune(ctx, c, 8, true).algorithm, Algorithm::kTree) << collectiveName(c);
      }
      EXPECT_EQ(tune(ctx, Collective::kAllReduce, size_t(1) << 30).algorithm, Algorithm::kRing)
          << nodes << "x" << perNode;
      EXPECT_EQ(tune(ctx, Collective::kAllGather, 8, true).algorithm, Algorithm::kRing);  // no tree
    }
}

// A broadcast or all-reduce of 64 KiB (a slot) on the block, 2 and 4 ranks:
// one-shot's plain copies took 0.6-0.75x the rings' time (broadcast, 2
// ranks: 5.7-6.1 against 9.0-9.4 us), so the model must not send it to rings.
TEST(Tuner, OnTheHostBlockASlotsWorthIsStillOneShot) {
  for (int n : {2, 4}) {
    TuneContext ctx = contextFor(1, n);
    ctx.hostBlock = true;
    ASSERT_GE(hostBlockShape(n).slotBytes, size_t{64} << 10) << n;
    for (Collective c : {Collective::kAllReduce, Collective::kBroadcast})
      EXPECT_EQ(tune(ctx, c, size_t{64} << 10).algorithm, Algorithm::kOneShot) << collectiveName(c) << " " << n;
  }
}

TEST(Tuner, OnTheHostBlockEveryCollectiveOfTwoRanksIsOneShotWhileItFitsASlot) {
  TuneContext ctx = contextFor(1, 2);
  ctx.hostBlock = true;
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kBroadcast, Collective::kReduce,
                       Collective::kReduceScatter}) {
    EXPECT_EQ(tune(ctx, c, 8).algorithm, Algorithm::kOneShot) << collectiveName(c);
    EXPECT_EQ(tune(ctx, c, 4096).algorithm, Algorithm::kOneShot) << collectiveName(c);
  }
  // Without the block the ring's single hop is as short and stays.
  ctx.hostBlock = false;
  EXPECT_EQ(tune(ctx, Collective::kBroadcast, 8).algorithm, Algorithm::kRing);
  // Big calls go to rings, block or not.
  ctx.hostBlock = true;
  EXPECT_EQ(tune(ctx, Collective::kAllReduce, size_t(64) << 20).algorithm, Algorithm::kRing);
}

// Past one-shot connections' 8 ranks, one host's small calls still meet on
// the block (its slots shrink to keep it at 16 MiB); past 256 ranks, rings.
TEST(Tuner, OnTheHostBlockUpTo256RanksWhileItFitsTheSmallerSlots) {
  EXPECT_EQ(hostBlockShape(2).slotBytes, size_t{64} << 10);
  EXPECT_EQ(hostBlockShape(16).slotBytes, size_t{64} << 10);
  EXPECT_EQ(hostBlockShape(32).slotBytes, size_t{32} << 10);
  EXPECT_EQ(hostBlockShape(64).slotBytes, size_t{16} << 10);
  EXPECT_EQ(hostBlockShape(kHostBlockMaxRanks).slotBytes, size_t{4} << 10);
  for (int n : {9, 64, kHostBlockMaxRanks}) {
    TuneContext ctx = contextFor(1, n);
    ctx.hostBlock = true;
    EXPECT_EQ(tune(ctx, Collective::kAllReduce, 8).algorithm, Algorithm::kOneShot) << n;
    EXPECT_EQ(tune(ctx, Collective::kBroadcast, 8).algorithm, Algorithm::kOneShot) << n;
    EXPECT_NE(tune(ctx, Collective::kAllReduce, hostBlockShape(n).slotBytes + 4).algorithm, Algorithm::kOneShot) << n;
  }
  TuneContext ctx = contextFor(1, kHostBlockMaxRanks + 1);
  ctx.hostBlock = true;
  EXPECT_EQ(tune(ctx, Collective::kAllReduce, 8).algorithm, Algorithm::kRing);
}

// Few ranks get deep rings of headers (a broadcast's root runs far ahead);
// headers stay within 64 KiB (past 32 ranks, 16 deep) and the slots' data,
// 16 deep, within 16 MiB.
TEST(HostBlockShape, DeepWhileFewRanksWithinItsBudgets) {
  EXPECT_EQ(hostBlockShape(2).depth, 256);
  EXPECT_EQ(hostBlockShape(4).depth, 128);
  EXPECT_EQ(hostBlockShape(5).depth, 64);
  for (int n = 1; n <= kHostBlockMaxRanks; ++n) {
    const HostBlockShape s = hostBlockShape(n);
    EXPECT_EQ(s.dataDepth, 16) << n;
    EXPECT_GE(s.depth, s.dataDepth) << n;
    EXPECT_EQ(s.depth & (s.depth - 1), 0) << n;
    if (s.depth > 16) {
      EXPECT_LE(s.depth * static_cast<size_t>(n) * kHostBlockHeaderBytes, size_t{64} << 10) << n;
    }
    EXPECT_LE(s.slotBytes * s.dataDepth * n, size_t{16} << 20) << n;
  }
}

TEST(Tuner, OneShotForSmallMessagesOnOneNodeRingsForLarge) {
  for (int perNode : {2, 4, 8}) {
    TuneContext ctx = contextFor(1, perNode);
    // With two ranks a ring's broadcast, gather or scatter is one hop too (and stays).
    for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kBroadcast,
                         Collective::kReduce, Collective::kReduceScatter}) {
      if (perNode > 2 || c == Collective::kAllReduce) {
        EXPECT_EQ(tune(ctx, c, 8 * perNode).algorithm, Algorithm::kOneShot) << collectiveName(c) << " " << perNode;
      }
    }
    EXPECT_EQ(tune(ctx, Collective::kAllReduce, size_t(64) << 20).algorithm, Algorithm::kRing) << perNode;
    // One node: the chain is the ring's length and moves more; rings win.
    EXPECT_EQ(tune(ctx, Collective::kAllReduce, 8, true).algorithm, Algorithm::kRing) << perNode;
  }
  // Past kOneShotMaxRanks, never.
  EXPECT_EQ(tune(contextFor(1, kOneShotMaxRanks + 1), Collective::kAllReduce, 8).algorithm, Algorithm::kRing);
  TuneContext ringOnly = contextFor(1, 4);
  ringOnly.filter = AlgoFilter::parse("ring").value();
  EXPECT_EQ(tune(ringOnly, Collective::kAllReduce, 8).algorithm, Algorithm::kRing);
  ringOnly.filter = AlgoFilter::parse("oneshot").value();
  EXPECT_EQ(tune(ringOnly, Collective::kAllReduce, size_t(1) << 30).algorithm, Algorithm::kOneShot);
}

TEST(Tuner, MoreChannelsAndBiggerChunksForBigMessages) {
  TuneContext ctx = contextFor(2, 4);
  TuneChoice small = tune(ctx, Collective::kAllReduce, 4096);
  TuneChoice big = tune(ctx, Collective::kAllReduce, size_t(256) << 20);
  EXPECT_EQ(small.nchannels, 1);
  EXPECT_GT(big.nchannels, 1);
  EXPECT_GE(big.chunkBytes, small.chunkBytes);
  EXPECT_LE(big.chunkBytes, size_t(128) << 10);
  // The model is monotonic in size.
  double last = 0;
  for (size_t b = 8; b < (size_t(1) << 31); b *= 4) {
    double t = tune(ctx, Collective::kAllReduce, b).predictedUs;
    EXPECT_GE(t, last);
    last = t;
  }
}

// Recursive doubling: all-reduce of host buffers across nodes, small calls,
// few ranks; never on one node (the host block serves those), never for
// device buffers, never past two one-shot slots.
TEST(Tuner, RecursiveDoublingOnlyForSmallAllReducesAcrossFewNodes) {
  const Algorithm rd = Algorithm::kRecursiveDoubling;
  EXPECT_TRUE(algorithmSupports(rd, Collective::kAllReduce));
  EXPECT_FALSE(algorithmSupports(rd, Collective::kBroadcast));
  TuneContext two = contextFor(2, 2);
  EXPECT_LT(predictUs(two, Collective::kAllReduce, 8, rd, 1, kOneShotSlotBytes), 1e29);
  EXPECT_GE(predictUs(two, Collective::kAllReduce, 1 << 20, rd, 1, kOneShotSlotBytes), 1e29);
  EXPECT_GE(predictUs(contextFor(1, 4), Collective::kAllReduce, 8, rd, 1, kOneShotSlotBytes), 1e29);
  EXPECT_GE(predictUs(contextFor(16, 1), Collective::kAllReduce, 8, rd, 1, kOneShotSlotBytes), 1e29);
  two.filter = AlgoFilter::parse("allreduce:rd").value();
  EXPECT_EQ(tune(two, Collective::kAllReduce, 8).algorithm, rd);
  EXPECT_NE(tune(two, Collective::kAllReduce, 8, true).algorithm, rd);  // device buffers
  // A round costs a hop: rounds cross nodes only past a node's ranks.
  TuneContext far = contextFor(2, 2);
  far.net.latencyUs *= 10;
  EXPECT_GT(predictUs(far, Collective::kAllReduce, 8, rd, 1, kOneShotSlotBytes),
            predictUs(contextFor(2, 2), Collective::kAllReduce, 8, rd, 1, kOneShotSlotBytes));
}

// Across nodes, one-shot sends a whole buffer to every peer (all-reduce,
// reduce, broadcast) only up to 64 KiB, where recursive doubling stops too:
// past it, however its small sizes measured and however dear the others
// came out, it is not chosen. Its gathers and scatters send a rank's block
// and keep their price; one host keeps its own rules.
TEST(Tuner, AcrossNodesOneShotSendsWholeBuffersOnlyWhileSmall) {
  const Algorithm oneShot = Algorithm::kOneShot;
  TuneContext t = contextFor(4, 1);
  for (Collective c : {Collective::kAllReduce, Collective::kReduce, Collective::kBroadcast}) {
    EXPECT_LT(predictUs(t, c, 64 << 10, oneShot, 1, kOneShotSlotBytes), 1e29) << collectiveName(c);
    EXPECT_GE(predictUs(t, c, (64 << 10) + 4, oneShot, 1, kOneShotSlotBytes), 1e29) << collectiveName(c);
  }
  EXPECT_LT(predictUs(t, Collective::kAllGather, 1 << 20, oneShot, 1, kOneShotSlotBytes), 1e29);
  EXPECT_LT(predictUs(t, Collective::kReduceScatter, 1 << 20, oneShot, 1, kOneShotSlotBytes), 1e29);
  EXPECT_LT(predictUs(contextFor(1, 4), Collective::kAllReduce, 1 << 20, oneShot, 1, kOneShotSlotBytes), 1e29);
  // Init measured every other algorithm at 4x its model and one-shot at half.
  for (int a = 0; a < kNumAlgorithms; ++a) {
    TuneContext::Calibration& k = t.allReduce[a];
    const bool cheap = a == static_cast<int>(oneShot);
    const double sizes[] = {8, 256, algorithmEntry(static_cast<Algorithm>(a)).calibrationBytes[0],
                            algorithmEntry(static_cast<Algorithm>(a)).calibrationBytes[1]};
    k.points = 4;
    for (int p = 0; p < 4; ++p) {
      k.bytes[p] = sizes[p];
      k.ratio[p] = cheap ? 0.5 : 4.0;
    }
  }
  EXPECT_EQ(tune(t, Collective::kAllReduce, 16 << 10).algorithm, oneShot);
  for (size_t bytes : {size_t(1) << 20, size_t(8) << 20, size_t(64) << 20})
    EXPECT_NE(tune(t, Collective::kAllReduce, bytes).algorithm, oneShot) << bytes;
}

// The slow draws of ranks sharing cores are the machine's: every host
// call's prediction carries them, and no choice moves.
TEST(Tuner, SlowDrawsRaiseEveryHostPredictionAndMoveNoChoice) {
  for (const auto& [nodes, per] : {std::pair{3, 2}, std::pair{4, 1}, std::pair{2, 2}}) {
    const TuneContext plain = contextFor(nodes, per);
    TuneContext slow = plain;
    slow.slowDrawFactor = 1.3;
    for (Collective c : {Collective::kAllReduce, Collective::kBroadcast, Collective::kAllGather})
      for (size_t bytes = 8; bytes <= (size_t(64) << 20); bytes *= 8) {
        const TuneChoice a = tune(plain, c, bytes), b = tune(slow, c, bytes);
        EXPECT_EQ(a.algorithm, b.algorithm) << nodes << "x" << per << " " << bytes;
        EXPECT_EQ(a.nchannels, b.nchannels);
        EXPECT_EQ(a.chunkBytes, b.chunkBytes);
        EXPECT_DOUBLE_EQ(b.predictedUs, 1.3 * a.predictedUs);
        // Device calls are not what init timed.
        EXPECT_DOUBLE_EQ(tune(slow, c, bytes, true).predictedUs, tune(plain, c, bytes, true).predictedUs);
      }
    // What a calibration sets its measurements against has none.
    EXPECT_DOUBLE_EQ(restrictedTo(slow, Algorithm::kRing).slowDrawFactor, 1.0);
  }
}

// An all-reduce algorithm init timed carries its own slow draws in place
// of the machine's; other collectives, and algorithms init did not time,
// keep the machine's. Still no choice moves.
TEST(Tuner, AnAlgorithmsOwnSlowDrawsPriceItsAllReduces) {
  const TuneContext plain = contextFor(4, 1);
  TuneContext slow = plain;
  slow.slowDrawFactor = 1.1;
  const Algorithm rd = Algorithm::kRecursiveDoubling;
  slow.allReduce[static_cast<int>(rd)].slowDraw = 1.4;
  bool sawRd = false, sawOther = false;
  for (size_t bytes = 8; bytes <= (size_t(64) << 20); bytes *= 8) {
    const TuneChoice a = tune(plain, Collective::kAllReduce, bytes), b = tune(slow, Collective::kAllReduce, bytes);
    EXPECT_EQ(a.algorithm, b.algorithm) << bytes;
    EXPECT_DOUBLE_EQ(b.predictedUs, (a.algorithm == rd ? 1.4 : 1.1) * a.predictedUs) << bytes;
    (a.algorithm == rd ? sawRd : sawOther) = true;
    const TuneChoice g = tune(slow, Collective::kAllGather, bytes);
    EXPECT_DOUBLE_EQ(g.predictedUs, 1.1 * tune(plain, Collective::kAllGather, bytes).predictedUs) << bytes;
  }
  EXPECT_TRUE(sawRd && sawOther) << "the sizes should span recursive doubling and another algorithm";
  // What a calibration sets its measurements against has none.
  const TuneContext only = restrictedTo(slow, rd);
  EXPECT_DOUBLE_EQ(only.allReduce[static_cast<int>(rd)].slowDraw, 0.0);
  EXPECT_DOUBLE_EQ(tune(only, Collective::kAllReduce, 8).predictedUs,
                   tune(restrictedTo(plain, rd), Collective::kAllReduce, 8).predictedUs);
}

// Two-level: when a node's link is what limits, its ranks reduce-scatter
// inside the node first, so the link carries the buffer once a round
// instead of once from every rank; the smallest calls keep recursive
// doubling (two-level's rounds inside nodes are hops too). Only where every
// node holds the same power of two of ranks, for host buffers, within the
// one-shot channel's ranks and slots.
TEST(Tuner, TwoLevelWhereANodesLinkLimits) {
  const Algorithm twoLevel = Algorithm::kTwoLevel;
  EXPECT_TRUE(algorithmSupports(twoLevel, Collective::kAllReduce));
  EXPECT_FALSE(algorithmSupports(twoLevel, Collective::kReduce));
  TuneContext slow = contextFor(2, 2, 4);  // 4 Gbit/s a node
  EXPECT_TRUE(slow.nodesAlike);
  for (size_t bytes : {size_t(16) << 10, size_t(32) << 10, size_t(64) << 10})
    EXPECT_EQ(tune(slow, Collective::kAllReduce, bytes).algorithm, twoLevel) << bytes;
  EXPECT_NE(tune(slow, Collective::kAllReduce, 8).algorithm, twoLevel);
  EXPECT_NE(tune(slow, Collective::kAllReduce, 64 << 10, true).algorithm, twoLevel);  // device buffers
  // Half the bytes over the link where recursive doubling sends them from both ranks.
  const double rd = predictUs(slow, Collective::kAllReduce, 32 << 10, Algorithm::kRecursiveDoubling, 1, kOneShotSlotBytes);
  const double two = predictUs(slow, Collective::kAllReduce, 32 << 10, twoLevel, 1, kOneShotSlotBytes);
  EXPECT_LT(two, rd * 0.75);
  // On two nodes a node's link carries the block once each way as halving
  // and doubling's would, in one round across instead of two: never
  // dearer, at any size the two serve (2 x 2 on veth, 4 MiB: 7.7-11.2 ms
  // against halving-doubling's 8.9-11.3), until halving-doubling pipelines
  // (twoLevelSegments): then its rounds inside nodes hide behind those
  // across, and it is the cheaper. On three, see below.
  for (auto [nodes, rate] : {std::pair{2, 4.0}, std::pair{2, 10.0}}) {
    TuneContext ctx = contextFor(nodes, 2, rate);
    for (size_t bytes = 256 << 10; bytes <= (size_t(64) << 20); bytes *= 4) {
      const double two = predictUs(ctx, Collective::kAllReduce, bytes, twoLevel, 1, kOneShotSlotBytes);
      const double hd = predictUs(ctx, Collective::kAllReduce, bytes, Algorithm::kHalvingDoubling, 1, kOneShotSlotBytes);
      EXPECT_LT(two, 1e29) << nodes << " nodes, " << bytes;
      if (twoLevelSegments(bytes, 2, kTwoLevelSegmentBytes) == 1) EXPECT_LE(two, hd) << nodes << " nodes, " << bytes;
      else EXPECT_LT(hd, two) << nodes << " nodes, " << bytes;
    }
  }
  for (auto [nodes, perNode] : {std::pair{4, 1}, std::pair{3, 3}, std::pair{1, 4}, std::pair{8, 2}}) {
    TuneContext ctx = contextFor(nodes, perNode, 4);
    EXPECT_GE(predictUs(ctx, Collective::kAllReduce, 32 << 10, twoLevel, 1, kOneShotSlotBytes), 1e29)
        << nodes << "x" << perNode;
  }
}

// Halving and doubling: across 4 nodes a node's link carries 1.5 times the
// buffer in 4 rounds, where recursive doubling carries it twice and a ring
// takes 6 hops; with one rank a node too.
TEST(Tuner, HalvingDoublingForMiddleSizesAcrossNodes) {
  const Algorithm hd = Algorithm::kHalvingDoubling;
  TuneContext four = contextFor(4, 1, 4);
  EXPECT_TRUE(four.nodesAlike);
  EXPECT_EQ(tune(four, Collective::kAllReduce, 256 << 10).algorithm, hd);
  EXPECT_NE(tune(four, Collective::kAllReduce, 8).algorithm, hd);  // 4 rounds where 2 do
  EXPECT_LT(predictUs(four, Collective::kAllReduce, 1 << 20, hd, 1, kOneShotSlotBytes),
            predictUs(four, Collective::kAllReduce, 1 << 20, Algorithm::kTree, 1, 128 << 10));
  EXPECT_GE(predictUs(four, Collective::kAllReduce, size_t(1) << 30, hd, 1, kOneShotSlotBytes), 1e29);
  EXPECT_GE(predictUs(contextFor(3, 3), Collective::kAllReduce, 1 << 20, hd, 1, kOneShotSlotBytes), 1e29);
}

// Across 3 nodes halving and doubling runs a ring of the nodes: a node's
// link carries 4/3 of its block each way, where two-level's fold sends the
// third node's block through its partner's link and back, and a ring of
// every rank carries 5/3 of the buffer through each link (3 x 2 on 4 Gbit/s
// links, where rings and trees reached 0.47 GB/s of 0.5 at most).
TEST(Tuner, HalvingDoublingRingsAcrossThreeNodesWhereTheLinksLimit) {
  const TuneContext three = contextFor(3, 2, 4);
  for (size_t bytes = 1 << 20; bytes <= (size_t(64) << 20); bytes *= 4) {
    const double hd = predictUs(three, Collective::kAllReduce, bytes, Algorithm::kHalvingDoubling, 1, kOneShotSlotBytes);
    EXPECT_LT(hd, predictUs(three, Collective::kAllReduce, bytes, Algorithm::kTwoLevel, 1, kOneShotSlotBytes)) << bytes;
    for (int nch = 1; nch <= 2; ++nch)
      EXPECT_LT(hd, predictUs(three, Collective::kAllReduce, bytes, Algorithm::kRing, nch, 128 << 10)) << bytes;
    EXPECT_EQ(tune(three, Collective::kAllReduce, bytes).algorithm, Algorithm::kHalvingDoubling) << bytes;
  }
}

TEST(Tuner, FilterAndForcedChannelsAreObeyed) {
  TuneContext ctx = contextFor(16, 1);
  ctx.filter = AlgoFilter::parse("ring").value();
  EXPECT_EQ(tune(ctx, Collective::kAllReduce, 8).algorithm, Algorithm::kRing);
  ctx.filter = AlgoFilter::parse("tree").value();
  EXPECT_EQ(tune(ctx, Collective::kAllReduce, size_t(1) << 30).algorithm, Algorithm::kTree);
  ctx.channelsForced = true;
  ctx.maxChannels = 3;
  EXPECT_EQ(tune(ctx, Collective::kAllReduce, 8).nchannels, 3);
}

}  // namespace
}  // namespace tutti

namespace tutti {
namespace {

// Each GPU of the synthetic machine sends through the NIC under its own PCI
// switch, then the other NIC of its socket, then the far socket's; NVLink
// through the NVSwitch does not make far NICs near.
TEST(NicAffinity, NearestNicFirstOnTheSyntheticMachine) {
  auto graph = readTopologyFile(std::string(TUTTI_TEST_DATA) + "/synthetic_2numa_8gpu_4nic.json");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  using V = std::vector<std::string>;
  EXPECT_EQ(nicsNearestFirst(*graph, "0000:11:00.0"), (V{"ib0", "ib1", "ib2", "ib3"}));
  EXPECT_EQ(nicsNearestFirst(*graph, "0000:32:00.0"), (V{"ib1", "ib0", "ib2", "ib3"}));
  EXPECT_EQ(nicsNearestFirst(*graph, "0000:51:00.0"), (V{"ib2", "ib3", "ib0", "ib1"}));
  EXPECT_EQ(nicsNearestFirst(*graph, "0000:72:00.0"), (V{"ib3", "ib2", "ib0", "ib1"}));
  EXPECT_TRUE(nicsNearestFirst(*graph, "0000:99:00.0").empty());
}

// NCCL's PCI distances, which GPUDirect RDMA is allowed by: the NIC under
// the GPU's own switch is PIX, the other NIC of its socket PHB (through the
// host bridge), a NIC of the far socket SYS; NVLink does not shorten them.
TEST(NicAffinity, PciPathsOnTheSyntheticMachine) {
  auto graph = readTopologyFile(std::string(TUTTI_TEST_DATA) + "/synthetic_2numa_8gpu_4nic.json");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto path = [&](const char* gpu, const char* nic) {
    auto p = pciPathBetween(*graph, gpu, nic);
    return p ? std::string(pciPathName(*p)) : std::string("unknown");
  };
  EXPECT_EQ(path("0000:11:00.0", "0000:18:00.0"), "PIX");
  EXPECT_EQ(path("0000:11:00.0", "0000:38:00.0"), "PHB");
  EXPECT_EQ(path("0000:11:00.0", "0000:58:00.0"), "SYS");
  EXPECT_EQ(path("0000:72:00.0", "0000:78:00.0"), "PIX");
  EXPECT_EQ(path("0000:72:00.0", "0000:18:00.0"), "SYS");
  EXPECT_EQ(path("0000:11:00.0", "0000:99:00.0"), "unknown");  // no such NIC
  EXPECT_EQ(path("0000:99:00.0", "0000:18:00.0"), "unknown");  // no such GPU
}

// Switches below switches, no CPU between: PXB; a GPU and NIC straight on
// the NUMA node: PHB.
TEST(NicAffinity, PciPathThroughNestedSwitchesIsPxb) {
  TopoGraph g;
  auto node = [&](const char* id, TopoKind kind, const char* bus) {
    TopoNode n;
    n.id = id;
    n.kind = kind;
    n.busId = bus;
    return g.add(n);
  };
  node("numa0", TopoKind::kNuma, "");
  node("top", TopoKind::kPciSwitch, "0000:01:00.0");
  node("left", TopoKind::kPciSwitch, "0000:02:00.0");
  node("right", TopoKind::kPciSwitch, "0000:03:00.0");
  node("gpu0", TopoKind::kGpu, "0000:04:00.0");
  node("nic:a", TopoKind::kNic, "0000:05:00.0");
  node("gpu1", TopoKind::kGpu, "0000:06:00.0");
  node("nic:b", TopoKind::kNic, "0000:07:00.0");
  g.link("numa0", "top", LinkKind::kPci, 24);
  g.link("top", "left", LinkKind::kPci, 24);
  g.link("top", "right", LinkKind::kPci, 24);
  g.link("left", "gpu0", LinkKind::kPci, 24);
  g.link("right", "nic:a", LinkKind::kPci, 24);
  g.link("numa0", "gpu1", LinkKind::kPci, 24);
  g.link("numa0", "nic:b", LinkKind::kPci, 24);
  EXPECT_EQ(pciPathBetween(g, "0000:04:00.0", "0000:05:00.0"), PciPath::kPxb);
  EXPECT_EQ(pciPathBetween(g, "0000:06:00.0", "0000:07:00.0"), PciPath::kPhb);
  EXPECT_EQ(pciPathBetween(g, "0000:04:00.0", "0000:07:00.0"), PciPath::kPhb);
}

}  // namespace
}  // namespace tutti
