// Ring and tree plans, checked two ways without any network: structurally
// (every send has a matching receive of the same size, in order) and by
// running every rank's plan through the real executor over in-memory
// connections, one thread for all ranks, with tiny slots so chunking and
// pipelining are exercised at every size. Layouts are synthetic: several
// nodes, ranks blocked or interleaved over them.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <tuple>
#include <memory>
#include <numeric>
#include <vector>

#include "src/exec/executor.h"
#include "src/plan/algorithms.h"
#include "src/plan/planner.h"

namespace tutti {
namespace {

// A slot ring shared by one sender and one receiver, in this process.
// With `lag`, a posted chunk shows only at the receiver's lag-th look, as
// a network's would: ranks then wait in the middle of a phase too.
struct MemoryPipe {
  size_t slotBytes;
  int nslots;
  std::vector<std::vector<char>> slots;
  std::vector<size_t> sizes;
  uint64_t posted = 0, consumed = 0;
  int lag = 0, looks = 0;
  MemoryPipe(size_t bytes, int n, int lag) : slotBytes(bytes), nslots(n), slots(n, std::vector<char>(bytes)), sizes(n), lag(lag) {}
};

class MemorySend final : public SendConnection {
 public:
  explicit MemorySend(MemoryPipe* p) : p_(p) {}
  void* acquire(size_t* cap, uint32_t ahead) override {
    const uint64_t index = p_->posted + ahead;
    if (index - p_->consumed >= static_cast<uint64_t>(p_->nslots)) return nullptr;
    *cap = p_->slotBytes;
    return p_->slots[index % p_->nslots].data();
  }
  Status post(size_t bytes) override {
    p_->sizes[p_->posted % p_->nslots] = bytes;
    ++p_->posted;
    return Status::Ok();
  }
  Status progress() override { return Status::Ok(); }
  bool flushed() const override { return true; }
  Status checkPeer() override { return Status::Ok(); }
  void notifyFailure(int) override {}
  int reportedFailure() const override { return -1; }
  SlotRegion slots() const override { return {}; }

 private:
  MemoryPipe* p_;
};

class MemoryRecv final : public RecvConnection {
 public:
  explicit MemoryRecv(MemoryPipe* p) : p_(p) {}
  const void* peek(size_t* bytes, uint32_t ahead) override {
    const uint64_t index = p_->consumed + ahead;
    if (index >= p_->posted) return nullptr;
    if (p_->looks++ < p_->lag) return nullptr;
    p_->looks = 0;
    *bytes = p_->sizes[index % p_->nslots];
    return p_->slots[index % p_->nslots].data();
  }
  Status release() override {
    ++p_->consumed;
    return Status::Ok();
  }
  Status progress() override { return Status::Ok(); }
  Status checkPeer() override { return Status::Ok(); }
  void notifyFailure(int) override {}
  int reportedFailure() const override { return -1; }
  SlotRegion slots() const override { return {}; }

 private:
  MemoryPipe* p_;
};

// The simulation's slots: 128 bytes on rings and trees (chunks of 64), and
// on the one-shot channel by kind of link, as Connections::specFor sizes
// them. The two kinds differ in both sizes here (the library's slots are
// alike today; only their chunks differ), the inside kind's slots the larger
// and its chunks the smaller, so a chunk cut for the wrong kind either
// overflows a slot or arrives in another size than its receiver cut.
constexpr size_t kSimChunkBytes = 64;
constexpr OneShotSlots kSimInside{80, 3, 32}, kSimAcross{64, 3, 64};

// Connections between any two ranks on any channel, made on first use:
// pipe (c, from, to) carries from -> to on channel c.
class MemoryFabric {
 public:
  MemoryFabric(const NodeLayout& layout, int lag) : layout_(layout), lag_(lag) {
    for (int r = 0; r < layout.nranks(); ++r) peers_.push_back(std::make_unique<RankPeers>(this, r));
  }
  Peers* peers(int rank) { return peers_[rank].get(); }

 private:
  struct Ends {
    std::unique_ptr<MemoryPipe> pipe;
    std::unique_ptr<MemorySend> send;
    std::unique_ptr<MemoryRecv> recv;
  };
  Ends& ends(int c, int from, int to) {
    Ends& e = pipes_[{c, from, to}];
    if (!e.pipe) {
      const OneShotSlots slots = c != kOneShotChannel ? OneShotSlots{2 * kSimChunkBytes, 3, kSimChunkBytes}
                                 : layout_.nodeOf(from) == layout_.nodeOf(to) ? kSimInside
                                                                              : kSimAcross;
      e.pipe = std::make_unique<MemoryPipe>(slots.slotBytes, slots.count, lag_);
      e.send = std::make_unique<MemorySend>(e.pipe.get());
      e.recv = std::make_unique<MemoryRecv>(e.pipe.get());
    }
    return e;
  }
  struct RankPeers final : Peers {
    RankPeers(MemoryFabric* f, int rank) : fabric(f), rank(rank) {}
    SendConnection* sendTo(Memory, int c, int peer) override { return fabric->ends(c, rank, peer).send.get(); }
    RecvConnection* recvFrom(Memory, int c, int peer) override { return fabric->ends(c, peer, rank).recv.get(); }
    std::string describePeer(int peer) const override { return "rank " + std::to_string(peer); }
    void notifyFailure(int) override {}
    int reportedFailure(double) override { return -1; }
    MemoryFabric* fabric;
    int rank;
  };
  const NodeLayout& layout_;
  int lag_;
  std::map<std::tuple<int, int, int>, Ends> pipes_;
  std::vector<std::unique_ptr<RankPeers>> peers_;
};

// How a simulated job is laid out and which algorithm it runs.
struct Job {
  int nodes = 1;
  int perNode = 1;
  bool interleaved = false;
  Algorithm algorithm = Algorithm::kRing;
  RingOrder order = RingOrder::kTopo;
  int channels = 1;
  int lag = 0;  // MemoryPipe::lag
  size_t segmentBytes = kTwoLevelSegmentBytes;  // PlanRequest::twoLevelSegmentBytes
  int n() const { return nodes * perNode; }
};

// Runs `coll` on int32 data where rank r's input element i is r*1000003 + i,
// and returns every rank's output.
std::vector<std::vector<int32_t>> simulate(Collective coll, const Job& job, size_t count, int root,
                                           bool inPlace, RedOp op = RedOp::kSum) {
  const int n = job.n();
  size_t inElems = coll == Collective::kReduceScatter ? count * n : count;
  size_t outElems = coll == Collective::kAllGather ? count * n : count;
  NodeLayout layout = NodeLayout::uniform(job.nodes, job.perNode, job.interleaved, 1, 10, 4);
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < job.channels; ++c) rings.push_back(layout.ring(c, job.order));
  MemoryFabric fabric(layout, job.lag);
  std::vector<std::vector<int32_t>> in(n), out(n, std::vector<int32_t>(outElems + inElems, -1));
  std::vector<Plan> plans(n);
  std::vector<Work> works(n);
  for (int r = 0; r < n; ++r) {
    in[r].resize(inElems);
    for (size_t i = 0; i < inElems; ++i) in[r][i] = static_cast<int32_t>(r * 1000003 + i);
    PlanRequest req;
    req.collective = coll;
    req.algorithm = job.algorithm;
    req.nranks = n;
    req.rank = r;
    req.root = root;
    req.count = count;
    req.nchannels = job.channels;
    req.rings = &rings;
    req.layout = &layout;
    req.twoLevelSegmentBytes = job.segmentBytes;
    buildPlan(req, &plans[r]);
    Work& w = works[r];
    w.plan = &plans[r];
    w.dtype = DataType::kInt32;
    w.op = op;
    w.nranks = n;
    w.rank = r;
    w.peers = fabric.peers(r);
    // Tiny chunks, so chunking and pipelining are exercised at every size.
    w.chunkBytes = kSimChunkBytes;
    w.oneShotSlots[static_cast<int>(OneShotLink::kInsideNode)] = kSimInside;
    w.oneShotSlots[static_cast<int>(OneShotLink::kAcrossNodes)] = kSimAcross;
    w.oneShotSlots[static_cast<int>(OneShotLink::kBoth)] = smallerOfEach(kSimInside, kSimAcross);
    if (inPlace) {
      size_t at = coll == Collective::kAllGather ? r * count : 0;
      std::copy(in[r].begin(), in[r].end(), out[r].begin() + at);
      w.input = out[r].data() + at;
      w.output = coll == Collective::kReduceScatter ? out[r].data() + r * count : out[r].data();
    } else {
      w.input = in[r].data();
      w.output = out[r].data();
    }
  }
  Status st = execute(works.data(), works.size(), hostReducer(), ExecOptions{0, 10});
  EXPECT_TRUE(st.ok()) << st.message();
  for (int r = 0; r < n; ++r) {
    if (inPlace && coll == Collective::kReduceScatter)
      out[r].erase(out[r].begin(), out[r].begin() + r * count);
    out[r].resize(outElems);
  }
  return out;
}

int32_t input(int r, size_t i) { return static_cast<int32_t>(r * 1000003 + i); }

struct Shape {
  int nodes;
  int perNode;
  bool interleaved;
  size_t count;
  int channels;
};

std::string describe(const Shape& s) {
  return std::to_string(s.nodes) + "x" + std::to_string(s.perNode) + (s.interleaved ? "i" : "") +
         "_n" + std::to_string(s.count) + "_c" + std::to_string(s.channels);
}

// Every collective on every algorithm that implements it, checked against
// the definitions.
void checkAll(const Shape& s, Algorithm algorithm, RingOrder order, int lag = 0,
              size_t segmentBytes = kTwoLevelSegmentBytes) {
  Job job{s.nodes, s.perNode, s.interleaved, algorithm, order, s.channels, lag, segmentBytes};
  const int n = job.n();
  for (bool inPlace : {false, true})
    for (int root : {0, n - 1, n / 2}) {
      std::string where = describe(s) + " " + algorithmName(algorithm) + (inPlace ? " in place" : "") +
                          " root " + std::to_string(root);
      auto ar = simulate(Collective::kAllReduce, job, s.count, 0, inPlace);
      auto bc = simulate(Collective::kBroadcast, job, s.count, root, inPlace);
      auto rd = simulate(Collective::kReduce, job, s.count, root, inPlace);
      bool ringOnly = algorithmSupports(algorithm, Collective::kAllGather);
      std::vector<std::vector<int32_t>> ag, rs;
      if (ringOnly) {
        ag = simulate(Collective::kAllGather, job, s.count, 0, inPlace);
        rs = simulate(Collective::kReduceScatter, job, s.count, 0, inPlace);
      }
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < s.count; ++i) {
          int32_t sum = 0;
          for (int q = 0; q < n; ++q) sum += input(q, i);
          ASSERT_EQ(ar[r][i], sum) << where << " allreduce rank " << r << " i " << i;
          ASSERT_EQ(bc[r][i], input(root, i)) << where << " broadcast rank " << r << " i " << i;
          if (r == root) {
            ASSERT_EQ(rd[r][i], sum) << where << " reduce i " << i;
          }
          if (!ringOnly) continue;
          int32_t rsSum = 0;
          for (int q = 0; q < n; ++q) rsSum += input(q, r * s.count + i);
          ASSERT_EQ(rs[r][i], rsSum) << where << " reducescatter rank " << r << " i " << i;
          for (int q = 0; q < n; ++q)
            ASSERT_EQ(ag[r][q * s.count + i], input(q, i)) << where << " allgather rank " << r;
        }
    }
}

class PlanSim : public ::testing::TestWithParam<Shape> {};

TEST_P(PlanSim, RingsInRankOrder) { checkAll(GetParam(), Algorithm::kRing, RingOrder::kRank); }
TEST_P(PlanSim, RingsKeepingNodesTogether) { checkAll(GetParam(), Algorithm::kRing, RingOrder::kTopo); }
TEST_P(PlanSim, DoubleBinaryTrees) { checkAll(GetParam(), Algorithm::kTree, RingOrder::kTopo); }
TEST_P(PlanSim, OneShot) { checkAll(GetParam(), Algorithm::kOneShot, RingOrder::kTopo); }
TEST_P(PlanSim, RecursiveDoubling) { checkAll(GetParam(), Algorithm::kRecursiveDoubling, RingOrder::kTopo); }
TEST_P(PlanSim, TwoLevel) { checkAll(GetParam(), Algorithm::kTwoLevel, RingOrder::kTopo); }
TEST_P(PlanSim, HalvingDoubling) { checkAll(GetParam(), Algorithm::kHalvingDoubling, RingOrder::kTopo); }

INSTANTIATE_TEST_SUITE_P(Shapes, PlanSim,
                         ::testing::Values(Shape{1, 1, false, 5, 1}, Shape{2, 1, false, 0, 1},
                                           Shape{2, 1, false, 1, 1}, Shape{3, 1, false, 7, 2},
                                           Shape{1, 4, false, 1023, 1}, Shape{5, 1, false, 1000, 3},
                                           Shape{4, 2, false, 777, 2}, Shape{3, 2, true, 500, 4},
                                           Shape{3, 3, true, 333, 3}, Shape{7, 1, false, 130, 2},
                                           Shape{6, 2, true, 65, 2}, Shape{3, 1, false, 20000, 4},
                                           // a whole call fits the inside kind's slot but not the across one's
                                           Shape{2, 2, false, 18, 1}, Shape{2, 2, true, 19, 1}),
                         [](const auto& info) { return describe(info.param); });

// The two-level all-reduces where they apply (nodes of the same power of
// two of ranks; halving and doubling with one rank a node too), with blocks
// that are empty, uneven or a cache line's, and node counts that are not
// powers of two (halving and doubling's ring across them).
class TwoLevelSim : public ::testing::TestWithParam<Shape> {};
TEST_P(TwoLevelSim, TwoLevel) { checkAll(GetParam(), Algorithm::kTwoLevel, RingOrder::kTopo); }
TEST_P(TwoLevelSim, HalvingDoubling) { checkAll(GetParam(), Algorithm::kHalvingDoubling, RingOrder::kTopo); }
// Chunks that arrive a look late: a rank waits inside a phase, and a phase's
// lead sends ahead (ChannelProgram::sendsAhead) where it may.
TEST_P(TwoLevelSim, TwoLevelOnLaggingLinks) { checkAll(GetParam(), Algorithm::kTwoLevel, RingOrder::kTopo, 1); }
TEST_P(TwoLevelSim, HalvingDoublingOnLaggingLinks) {
  checkAll(GetParam(), Algorithm::kHalvingDoubling, RingOrder::kTopo, 1);
}
// Pipelined (twoLevelSegments): segments of a fifth of the call, so up to
// five cross nodes one after another while the next is reduced inside.
TEST_P(TwoLevelSim, PipelinedHalvingDoubling) {
  checkAll(GetParam(), Algorithm::kHalvingDoubling, RingOrder::kTopo, 0, GetParam().count * 4 / 5);
}
TEST_P(TwoLevelSim, PipelinedHalvingDoublingOnLaggingLinks) {
  checkAll(GetParam(), Algorithm::kHalvingDoubling, RingOrder::kTopo, 1, GetParam().count * 4 / 5);
}
INSTANTIATE_TEST_SUITE_P(Shapes, TwoLevelSim,
                         ::testing::Values(Shape{2, 2, false, 0, 1}, Shape{2, 2, false, 1, 1},
                                           Shape{2, 2, false, 3, 1}, Shape{2, 2, false, 16, 1},
                                           Shape{2, 2, false, 1001, 1}, Shape{3, 2, false, 77, 1},
                                           Shape{2, 4, false, 1000, 1}, Shape{5, 2, false, 257, 1},
                                           Shape{3, 4, true, 129, 1}, Shape{2, 8, false, 4099, 1},
                                           Shape{4, 2, true, 40, 1}, Shape{4, 1, false, 1000, 1},
                                           Shape{5, 1, false, 3, 1}, Shape{8, 1, false, 4097, 1},
                                           Shape{6, 1, true, 100, 1}, Shape{2, 1, false, 64, 1},
                                           // rings across 3 and 5 nodes, many chunks a step
                                           Shape{3, 2, false, 5003, 1}, Shape{3, 1, false, 2999, 1},
                                           Shape{5, 2, true, 4001, 1},
                                           // blocks for some or all of a node's ranks (kTwoLevelMinBlockBytes)
                                           Shape{2, 2, false, 16387, 1}, Shape{2, 4, false, 16400, 1},
                                           Shape{2, 4, false, 32771, 1}, Shape{3, 2, true, 16390, 1}),
                         [](const auto& info) { return describe(info.param); });

// Which of each node's ranks send to another node in a two-level all-reduce
// of `count` floats.
std::vector<bool> crossesNodes(Algorithm algorithm, int nodes, int perNode, size_t count) {
  NodeLayout layout = NodeLayout::uniform(nodes, perNode, false, 1, 10, 4);
  std::vector<bool> crosses(perNode, false);
  for (int r = 0; r < nodes * perNode; ++r) {
    PlanRequest req;
    req.collective = Collective::kAllReduce;
    req.algorithm = algorithm;
    req.nranks = nodes * perNode;
    req.rank = r;
    req.count = count;
    req.layout = &layout;
    Plan plan;
    buildPlan(req, &plan);
    for (const ChannelProgram& p : plan.channels)
      for (const Step& s : p.steps)
        if (s.sendPeer >= 0 && s.count > 0 && layout.nodeOf(s.sendPeer) != layout.nodeOf(r))
          crosses[layout.localIndex(r)] = true;
  }
  return crosses;
}

// A block a crosser at least (kTwoLevelMinBlockBytes), one crosser at least.
TEST(TwoLevelPlan, SmallCallsCrossFromFewerRanks) {
  const size_t block = kTwoLevelMinBlockBytes / 4;  // floats
  using Crossers = std::vector<bool>;
  for (Algorithm a : {Algorithm::kTwoLevel, Algorithm::kHalvingDoubling}) {
    const char* name = algorithmName(a);
    EXPECT_EQ(crossesNodes(a, 2, 4, 4 * block), Crossers(4, true)) << name;
    EXPECT_EQ(crossesNodes(a, 2, 4, 4 * block - 1), (Crossers{true, false, true, false})) << name;
    EXPECT_EQ(crossesNodes(a, 2, 4, 2 * block), (Crossers{true, false, true, false})) << name;
    EXPECT_EQ(crossesNodes(a, 2, 4, 2 * block - 1), (Crossers{true, false, false, false})) << name;
    EXPECT_EQ(crossesNodes(a, 4, 4, 2), (Crossers{true, false, false, false})) << name;
    EXPECT_EQ(crossesNodes(a, 3, 2, 100), (Crossers{true, false})) << name;
    EXPECT_EQ(crossesNodes(a, 3, 2, 2 * block), (Crossers{true, true})) << name;
  }
}

TEST(RingPlan, StepsPairUp) {
  // What a rank sends to its ring successor on a channel, the successor
  // receives, chunk for chunk.
  NodeLayout layout = NodeLayout::uniform(3, 2, true, 1, 10, 4);
  std::vector<std::vector<int>> rings{layout.ring(0, RingOrder::kTopo), layout.ring(1, RingOrder::kTopo)};
  for (Collective coll : {Collective::kAllReduce, Collective::kAllGather, Collective::kBroadcast,
                          Collective::kReduce, Collective::kReduceScatter}) {
    const int n = 6;
    std::vector<Plan> plans(n);
    for (int r = 0; r < n; ++r) {
      PlanRequest req;
      req.collective = coll;
      req.nranks = n;
      req.rank = r;
      req.root = 1;
      req.count = 1000;
      req.nchannels = 2;
      req.rings = &rings;
      buildPlan(req, &plans[r]);
    }
    for (int c = 0; c < 2; ++c)
      for (int pos = 0; pos < n; ++pos) {
        int r = rings[c][pos], next = rings[c][(pos + 1) % n];
        std::vector<size_t> sent, received;
        for (const Step& s : plans[r].channels[c].steps)
          if (s.sendPeer >= 0) {
            EXPECT_EQ(s.sendPeer, next);
            sent.push_back(s.count);
          }
        for (const Step& s : plans[next].channels[c].steps)
          if (s.recvPeer >= 0) received.push_back(s.count);
        EXPECT_EQ(sent, received) << collectiveName(coll) << " rank " << r;
      }
  }
}

TEST(RingPlan, AllReduceHasTwoNMinusOneSteps) {
  Plan p;
  PlanRequest req;
  req.nranks = 5;
  req.rank = 2;
  req.count = 5000;
  buildPlan(req, &p);
  ASSERT_EQ(p.channels.size(), 1u);
  EXPECT_EQ(p.channels[0].steps.size(), 9u);
  int finals = 0;
  for (const Step& s : p.channels[0].steps) finals += s.final;
  EXPECT_EQ(finals, 1);
  EXPECT_NE(p.toString().find("recvReduceCopySend"), std::string::npos);
}

TEST(RingPlan, BlocksAreCacheLineAligned) {
  for (int j = 1; j < 7; ++j) EXPECT_EQ(blockStart(100003, 7, j, 4) % 16, 0u);
  EXPECT_EQ(blockStart(100003, 7, 7, 4), 100003u);
  EXPECT_EQ(blockStart(5, 4, 2, 4), 0u);  // tiny counts land in the last block
}

TEST(Plans, AvgDividesOnceAtTheEnd) {
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree}) {
    auto out = simulate(Collective::kAllReduce, Job{3, 1, false, a}, 50, 0, false, RedOp::kAvg);
    for (int r = 0; r < 3; ++r)
      for (size_t i = 0; i < 50; ++i)
        ASSERT_EQ(out[r][i], (input(0, i) + input(1, i) + input(2, i)) / 3) << algorithmName(a);
  }
}

// Halving-doubling's swaps inside a node fill that link's slots and those
// across fill the other's; recursive doubling, whose one phase talks to
// both, cuts to fit either, and where every node holds one rank (or one
// node holds all), to its one kind.
TEST(Plans, OneShotChunksFollowTheLinkOfEachPhase) {
  // Each program's kinds, one after another.
  auto linksOf = [](const NodeLayout& layout, Algorithm a, int rank, size_t programs = 1, size_t count = 1 << 18) {
    std::vector<std::vector<int>> rings{layout.ring(0, RingOrder::kTopo)};
    PlanRequest req;
    req.algorithm = a;
    req.nranks = layout.nranks();
    req.rank = rank;
    req.count = count;
    req.rings = &rings;
    req.layout = &layout;
    Plan p;
    buildPlan(req, &p);
    EXPECT_EQ(p.channels.size(), programs);
    std::vector<OneShotLink> links;
    for (const ChannelProgram& c : p.channels) links.insert(links.end(), c.phaseLinks.begin(), c.phaseLinks.end());
    return links;
  };
  using L = OneShotLink;
  const NodeLayout twoByTwo = NodeLayout::uniform(2, 2, false, 1, 10, 4);
  // Halve inside, halve across, double across, double inside.
  EXPECT_EQ(linksOf(twoByTwo, Algorithm::kHalvingDoubling, 1),
            (std::vector<L>{L::kInsideNode, L::kAcrossNodes, L::kAcrossNodes, L::kInsideNode}));
  // Pipelined in two segments (4 MiB): inside, halve and double each
  // segment's inside and its gathering back; across, halve and double each.
  EXPECT_EQ(linksOf(twoByTwo, Algorithm::kHalvingDoubling, 1, 2, 1 << 20),
            (std::vector<L>{L::kInsideNode, L::kInsideNode, L::kInsideNode, L::kInsideNode, L::kAcrossNodes,
                            L::kAcrossNodes, L::kAcrossNodes, L::kAcrossNodes}));
  EXPECT_EQ(linksOf(twoByTwo, Algorithm::kRecursiveDoubling, 1), std::vector<L>{L::kBoth});
  EXPECT_EQ(linksOf(NodeLayout::uniform(4, 1, false, 1, 10, 4), Algorithm::kRecursiveDoubling, 1),
            std::vector<L>{L::kAcrossNodes});
  EXPECT_EQ(linksOf(NodeLayout::uniform(1, 4, false, 1, 10, 4), Algorithm::kRecursiveDoubling, 1),
            std::vector<L>{L::kInsideNode});
}

// Halving and doubling across a number of nodes that is not a power of
// two: each node's link carries 2(m-1)/m of the buffer each way, as across
// a power of two, where folding the odd node into a partner sent the whole
// buffer twice through that partner's link.
TEST(Plans, HalvingDoublingLoadsEveryNodesLinkAlikeAcrossThreeNodes) {
  for (auto [nodes, perNode] : {std::pair{3, 2}, std::pair{3, 1}, std::pair{5, 2}, std::pair{6, 1}}) {
    const NodeLayout layout = NodeLayout::uniform(nodes, perNode, false, 1, 10, 4);
    std::vector<std::vector<int>> rings{layout.ring(0, RingOrder::kTopo)};
    const size_t count = 6000 * static_cast<size_t>(nodes * perNode);
    std::vector<double> out(nodes), in(nodes);
    for (int r = 0; r < layout.nranks(); ++r) {
      PlanRequest req;
      req.algorithm = Algorithm::kHalvingDoubling;
      req.nranks = layout.nranks();
      req.rank = r;
      req.count = count;
      req.rings = &rings;
      req.layout = &layout;
      Plan p;
      buildPlan(req, &p);
      for (const ChannelProgram& program : p.channels)
        for (const Step& s : program.steps) {
          if (s.sendPeer >= 0 && layout.nodeOf(s.sendPeer) != layout.nodeOf(r)) out[layout.nodeOf(r)] += s.count;
          if (s.recvPeer >= 0 && layout.nodeOf(s.recvPeer) != layout.nodeOf(r)) in[layout.nodeOf(r)] += s.count;
        }
    }
    const double share = 2.0 * (nodes - 1) / nodes * count;
    for (int m = 0; m < nodes; ++m) {
      EXPECT_LE(out[m], share * 1.01) << nodes << "x" << perNode << " node " << m << " sends";
      EXPECT_LE(in[m], share * 1.01) << nodes << "x" << perNode << " node " << m << " receives";
    }
  }
}

}  // namespace
}  // namespace tutti
