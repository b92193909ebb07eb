#include "src/comm/cores/node_cores.h"

#include <gtest/gtest.h>

namespace tutti {
namespace {

using Cores = std::vector<int>;

TEST(NodeCoreShare, TwoNodesOfTwoRanksOnTwoCoresTakeACoreEach) {
  EXPECT_EQ(nodeCoreShare({0, 1}, {0, 1}, 0, 4), Cores({0}));
  EXPECT_EQ(nodeCoreShare({0, 1}, {0, 1}, 1, 4), Cores({1}));
}

TEST(NodeCoreShare, CutsEvenlyInNodeOrderOverTheCoresGiven) {
  const Cores available = {2, 3, 5, 8, 9, 10};
  EXPECT_EQ(nodeCoreShare(available, {0, 1, 2}, 0, 12), Cores({2, 3}));
  EXPECT_EQ(nodeCoreShare(available, {0, 1, 2}, 1, 12), Cores({5, 8}));
  EXPECT_EQ(nodeCoreShare(available, {0, 1, 2}, 2, 12), Cores({9, 10}));
  // Nodes of another communicator's numbering: their order, not their values.
  EXPECT_EQ(nodeCoreShare({0, 1, 2, 3}, {1, 4}, 4, 8), Cores({2, 3}));
  // 3 nodes on 4 cores: every core used, none twice.
  Cores all;
  for (int node = 0; node < 3; ++node) {
    Cores share = nodeCoreShare({0, 1, 2, 3}, {0, 1, 2}, node, 6);
    EXPECT_FALSE(share.empty()) << "node " << node;
    all.insert(all.end(), share.begin(), share.end());
  }
  EXPECT_EQ(all, Cores({0, 1, 2, 3}));
}

TEST(NodeCoreShare, MoreNodesThanCoresTakeAsManyNodesACore) {
  EXPECT_EQ(nodeCoreShare({0, 1}, {0, 1, 2, 3}, 0, 4), Cores({0}));
  EXPECT_EQ(nodeCoreShare({0, 1}, {0, 1, 2, 3}, 1, 4), Cores({0}));
  EXPECT_EQ(nodeCoreShare({0, 1}, {0, 1, 2, 3}, 2, 4), Cores({1}));
  EXPECT_EQ(nodeCoreShare({0, 1}, {0, 1, 2, 3}, 3, 4), Cores({1}));
  EXPECT_EQ(nodeCoreShare({4, 6, 7}, {0, 1, 2, 3, 4, 5}, 5, 12), Cores({7}));
}

TEST(NodeCoreShare, LeavesTheCoresSharedWhereACutWouldNotHelp) {
  EXPECT_TRUE(nodeCoreShare({0, 1}, {0}, 0, 4).empty()) << "one node: its ranks share them already";
  EXPECT_TRUE(nodeCoreShare({0, 1}, {0, 1, 2}, 0, 6).empty()) << "3 nodes on 2 cores: one core would carry two";
  EXPECT_TRUE(nodeCoreShare({0, 1, 2, 3}, {0, 1}, 0, 4).empty()) << "a core for every rank";
  EXPECT_TRUE(nodeCoreShare({0, 1}, {0, 1}, 5, 4).empty()) << "a node not among them";
  EXPECT_TRUE(nodeCoreShare({}, {0, 1}, 0, 4).empty());
}

TEST(NodeCores, DescribesAsTasksetDoes) {
  EXPECT_EQ(describeCores({0, 1, 2, 3, 6}), "0-3,6");
  EXPECT_EQ(describeCores({1}), "1");
  EXPECT_EQ(describeCores({0, 2, 3}), "0,2-3");
  EXPECT_EQ(describeCores({}), "");
}

TEST(NodeCores, BindsTheCallingThreadToItsShare) {
  const Cores before = threadCores();
  ASSERT_FALSE(before.empty());
  ASSERT_TRUE(bindThreadTo({before.back()}).ok());
  EXPECT_EQ(threadCores(), Cores({before.back()}));
  ASSERT_TRUE(bindThreadTo(before).ok());
  EXPECT_EQ(threadCores(), before);
  EXPECT_FALSE(bindThreadTo({}).ok()) << "an empty set is refused, and said so";
}

}  // namespace
}  // namespace tutti
