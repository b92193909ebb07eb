// The algorithm table (src/plan/algorithms.h): every entry is whole, its
// name is what TUTTI_ALGO takes, and the plans it builds declare the tagging
// and scratch the communicator gives them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/plan/algorithms.h"
#include "src/plan/layout.h"
#include "src/plan/planner.h"
#include "src/plan/tuner.h"

namespace tutti {
namespace {

constexpr Collective kWithAlgorithms[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kBroadcast,
                                          Collective::kReduce, Collective::kReduceScatter};

TEST(AlgorithmTable, EveryChoosableAlgorithmHasACostAPlannerAndTheNameTuttiAlgoTakes) {
  for (int i = 0; i < kNumAlgorithms; ++i) {
    const Algorithm a = static_cast<Algorithm>(i);
    const AlgorithmEntry& e = algorithmEntry(a);
    SCOPED_TRACE(e.name);
    EXPECT_EQ(e.id, a);
    EXPECT_NE(e.costUs, nullptr);
    EXPECT_NE(e.planChannel, nullptr);
    EXPECT_TRUE(e.implements(Collective::kAllReduce));
    EXPECT_GT(e.calibrationBytes[0], 0);
    EXPECT_GT(e.calibrationBytes[1], e.calibrationBytes[0]);
    EXPECT_EQ(algorithmNamed(e.name), &e);
    EXPECT_STREQ(algorithmName(a), e.name);
    Result<AlgoFilter> only = AlgoFilter::parse(e.name);
    ASSERT_TRUE(only.ok()) << only.status().message();
    for (Collective c : kWithAlgorithms)
      for (int j = 0; j < kNumAlgorithms; ++j)
        EXPECT_EQ(only.value().allows(c, static_cast<Algorithm>(j)), j == i) << collectiveName(c);
  }
}

TEST(AlgorithmTable, OrderedIsNotTheCostModelsToChoose) {
  const AlgorithmEntry& ordered = algorithmEntry(Algorithm::kOrdered);
  EXPECT_EQ(ordered.costUs, nullptr);
  Result<AlgoFilter> f = AlgoFilter::parse("ordered");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("unknown algorithm \"ordered\" (tutti has ring, tree, oneshot, rd, twolevel and hd)"),
            std::string::npos)
      << f.status().message();
  TuneContext ctx = TuneContext::fromLayout(NodeLayout::uniform(2, 2, false, 1, 10, 4), {0, 1, 2, 3}, 2, false,
                                            128 << 10);
  EXPECT_GE(predictUs(ctx, Collective::kAllReduce, 1024, Algorithm::kOrdered, 1, 4096), 1e29);
  // Nor one an algorithm lacks the collective of.
  EXPECT_GE(predictUs(ctx, Collective::kAllGather, 1024, Algorithm::kTree, 1, 4096), 1e29);
  EXPECT_LT(predictUs(ctx, Collective::kAllReduce, 1024, Algorithm::kTree, 1, 4096), 1e29);
}

// A 2 x 2 layout's rank `rank` planning `coll` of 1000 floats with `a`.
Plan planFor(Algorithm a, Collective coll, int rank, bool onDevice = false, int root = 0, bool withLayout = true,
             int nranks = 4) {
  static const NodeLayout layout = NodeLayout::uniform(2, 2, false, 1, 10, 4);
  static const std::vector<std::vector<int>> rings = {layout.ring(0, RingOrder::kTopo), layout.ring(1, RingOrder::kTopo)};
  PlanRequest r;
  r.collective = coll;
  r.algorithm = a;
  r.nranks = nranks;
  r.rank = rank;
  r.root = root;
  r.count = 1000;
  r.elemSize = 4;
  r.nchannels = 2;
  r.rings = nranks == 4 ? &rings : nullptr;
  r.layout = withLayout ? &layout : nullptr;
  r.onDevice = onDevice;
  Plan plan;
  buildPlan(r, &plan);
  return plan;
}

TEST(AlgorithmTable, TheOneShotChannelsAlgorithmsTagTheirChunksOnOneChannel) {
  for (int i = 0; i < kNumAlgorithms; ++i) {
    const Algorithm a = static_cast<Algorithm>(i);
    const AlgorithmEntry& e = algorithmEntry(a);
    for (int rank = 0; rank < 4; ++rank) {
      const Plan p = planFor(a, Collective::kAllReduce, rank);
      EXPECT_EQ(p.algorithm, a) << e.name;
      EXPECT_EQ(p.taggedChunks, e.oneShotChannel) << e.name;
      for (const ChannelProgram& ch : p.channels)
        if (e.oneShotChannel) EXPECT_EQ(ch.channel, kOneShotChannel) << e.name;
        else EXPECT_GE(ch.channel, 0) << e.name;
    }
  }
}

TEST(AlgorithmTable, PlansDeclareTheScratchTheyNeed) {
  for (int rank = 0; rank < 4; ++rank) {
    // A tree reduce's ranks but the root accumulate their children off the output.
    const Plan tree = planFor(Algorithm::kTree, Collective::kReduce, rank, false, 2);
    EXPECT_EQ(tree.scratchBytes, rank == 2 ? 0u : 4000u) << rank;
    EXPECT_FALSE(tree.finalToOutput);
    EXPECT_EQ(planFor(Algorithm::kTree, Collective::kAllReduce, rank).scratchBytes, 0u);
    EXPECT_EQ(planFor(Algorithm::kRing, Collective::kReduce, rank, false, 2).scratchBytes, 0u);
    // A device's ordered sums accumulate in scratch, the final steps write the output.
    for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter}) {
      const Plan device = planFor(Algorithm::kOrdered, c, rank, true);
      EXPECT_EQ(device.scratchBytes, 4000u) << collectiveName(c);
      EXPECT_TRUE(device.finalToOutput) << collectiveName(c);
      const Plan host = planFor(Algorithm::kOrdered, c, rank, false);
      EXPECT_EQ(host.scratchBytes, 0u) << collectiveName(c);
      EXPECT_FALSE(host.finalToOutput) << collectiveName(c);
    }
    EXPECT_EQ(planFor(Algorithm::kOrdered, Collective::kReduce, rank, true).scratchBytes, 0u);
  }
}

TEST(AlgorithmTable, WhatTheChosenAlgorithmCannotServeTakesRings) {
  EXPECT_EQ(planFor(Algorithm::kRecursiveDoubling, Collective::kBroadcast, 1).algorithm, Algorithm::kRing);
  EXPECT_EQ(planFor(Algorithm::kHalvingDoubling, Collective::kAllGather, 1).algorithm, Algorithm::kRing);
  EXPECT_EQ(planFor(Algorithm::kTree, Collective::kAllGather, 1).algorithm, Algorithm::kRing);
  EXPECT_EQ(planFor(Algorithm::kOrdered, Collective::kAllGather, 1).algorithm, Algorithm::kRing);
  const Plan noLayout = planFor(Algorithm::kTree, Collective::kAllReduce, 1, false, 0, false);
  EXPECT_EQ(noLayout.algorithm, Algorithm::kRing);
  EXPECT_EQ(noLayout.channels.size(), 2u);  // the request's channels
  for (int i = 0; i <= kNumAlgorithms; ++i) {
    const Plan alone = planFor(static_cast<Algorithm>(i), Collective::kAllReduce, 0, false, 0, true, 1);
    EXPECT_EQ(alone.algorithm, Algorithm::kRing) << algorithmName(static_cast<Algorithm>(i));
    EXPECT_FALSE(alone.taggedChunks);
  }
}

}  // namespace
}  // namespace tutti
