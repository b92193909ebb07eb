// Double binary trees, as NCCL builds them: two binary trees over the nodes in
// which every node is interior in at most one, so each node's links carry the
// same load in both; inside a node the ranks form a chain below the node's
// head. Channels alternate between the two trees.
#pragma once

#include <vector>

#include "src/plan/layout.h"

namespace tutti {

// A binary tree over K nodes. Tree 0 is the in-order tree on positions
// p = 0..K-1 in which position p sits at the level of the lowest set bit of
// p+1: leaves are the even positions. Tree 1 puts node (p+1) mod K at position
// p, so its interior nodes are tree 0's leaves. `rootNode` >= 0 rotates both
// so that node is the root (broadcast and reduce).
struct NodeTree {
  int root = 0;
  std::vector<int> parent;                 // -1 at the root
  std::vector<std::vector<int>> children;  // at most two each
};
NodeTree buildNodeTree(int nnodes, int which, int rootNode = -1);

// One rank's neighbours in a rank-level tree: its node's tree links between
// node heads, and the node's chain below its head.
struct TreeNeighbors {
  int parent = -1;
  std::vector<int> children;  // up to three: two nodes' heads and the chain's next
};
// `rootRank` >= 0: the tree is rooted at that rank (broadcast, reduce).
TreeNeighbors rankTreeNeighbors(const NodeLayout& layout, int which, int rootRank, int rank);

// Edges between nodes on the way from the deepest leaf to the root.
int treeDepth(const NodeTree& tree);

}  // namespace tutti
