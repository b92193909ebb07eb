#include "src/plan/tree.h"

#include <algorithm>

namespace tutti {

namespace {

int lowbit(int v) { return v & -v; }

// Parent position of position p (v = p+1) in the in-order tree over v = 1..K:
// the neighbour one level up, skipping ancestors beyond K.
int positionParent(int p, int k) {
  int v = p + 1;
  int top = 1;
  while (top * 2 <= k) top *= 2;
  if (v == top) return -1;
  int b = lowbit(v);
  int up = (v | (b << 1)) & ~b;
  while (up > k) {
    int ub = lowbit(up);
    up = (up | (ub << 1)) & ~ub;
  }
  return up - 1;
}

}  // namespace

NodeTree buildNodeTree(int k, int which, int rootNode) {
  NodeTree t;
  t.parent.assign(k, -1);
  t.children.assign(k, {});
  if (k <= 0) return t;
  int top = 1;
  while (top * 2 <= k) top *= 2;
  const int rootPos = top - 1;
  int shift = which == 1 ? 1 : 0;
  if (rootNode >= 0) shift = ((rootNode - rootPos) % k + k) % k;
  auto nodeAt = [&](int p) { return (p + shift) % k; };
  t.root = nodeAt(rootPos);
  for (int p = 0; p < k; ++p) {
    int pp = positionParent(p, k);
    if (pp < 0) continue;
    t.parent[nodeAt(p)] = nodeAt(pp);
    t.children[nodeAt(pp)].push_back(nodeAt(p));
  }
  return t;
}

int treeDepth(const NodeTree& tree) {
  int depth = 0;
  for (size_t n = 0; n < tree.parent.size(); ++n) {
    int d = 0;
    for (int p = tree.parent[n]; p >= 0; p = tree.parent[p]) ++d;
    depth = std::max(depth, d);
  }
  return depth;
}

TreeNeighbors rankTreeNeighbors(const NodeLayout& layout, int which, int rootRank, int rank) {
  TreeNeighbors neighbors;
  const int node = layout.nodeOf(rank);
  const int rootNode = rootRank >= 0 ? layout.nodeOf(rootRank) : -1;
  NodeTree tree = buildNodeTree(layout.nnodes(), which, rootNode);
  // The chain of a node: its ranks starting at the head. The root's node
  // starts at the root; otherwise tree 1 starts one rank later than tree 0,
  // so the two trees leave a node through different ranks.
  auto chain = [&](int n) {
    const std::vector<int>& ranks = layout.ranksOf(n);
    size_t start = static_cast<size_t>(which) % ranks.size();
    if (n == rootNode) start = static_cast<size_t>(layout.localIndex(rootRank));
    std::vector<int> c;
    for (size_t i = 0; i < ranks.size(); ++i) c.push_back(ranks[(start + i) % ranks.size()]);
    return c;
  };
  std::vector<int> mine = chain(node);
  size_t pos = static_cast<size_t>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
  if (pos == 0) {
    if (tree.parent[node] >= 0) neighbors.parent = chain(tree.parent[node]).front();
    for (int child : tree.children[node]) neighbors.children.push_back(chain(child).front());
  } else {
    neighbors.parent = mine[pos - 1];
  }
  if (pos + 1 < mine.size()) neighbors.children.push_back(mine[pos + 1]);
  return neighbors;
}

}  // namespace tutti
