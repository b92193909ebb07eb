#include "src/plan/layout.h"

#include <algorithm>
#include <map>

namespace tutti {

NodeLayout::NodeLayout(const std::vector<RankTopo>& ranks) : topo_(ranks) {
  std::map<uint64_t, int> nodeIndex;
  nodeOf_.resize(ranks.size());
  localIndex_.resize(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    auto it = nodeIndex.find(ranks[r].hostHash);
    if (it == nodeIndex.end()) {
      it = nodeIndex.emplace(ranks[r].hostHash, static_cast<int>(nodes_.size())).first;
      nodes_.emplace_back();
    }
    nodeOf_[r] = it->second;
    localIndex_[r] = static_cast<int>(nodes_[it->second].size());
    nodes_[it->second].push_back(static_cast<int>(r));
  }
}

NodeLayout NodeLayout::uniform(int nodes, int ranksPerNode, bool interleaved, int nicsPerNode,
                               float netGbps, int coresPerNode) {
  std::vector<RankTopo> ranks(nodes * ranksPerNode);
  for (int r = 0; r < nodes * ranksPerNode; ++r) {
    int node = interleaved ? r % nodes : r / ranksPerNode;
    ranks[r].hostHash = 0x1000 + node;
    ranks[r].nics = nicsPerNode;
    ranks[r].netGbps = netGbps;
    ranks[r].cores = coresPerNode;
  }
  return NodeLayout(ranks);
}

int NodeLayout::maxRanksPerNode() const {
  size_t m = 0;
  for (const auto& n : nodes_) m = std::max(m, n.size());
  return static_cast<int>(m);
}

float NodeLayout::minNetGbps() const {
  float g = 0;
  for (size_t r = 0; r < topo_.size(); ++r)
    if (r == 0 || topo_[r].netGbps < g) g = topo_[r].netGbps;
  return g > 0 ? g : 10;
}

int NodeLayout::minNics() const {
  int n = 0;
  for (size_t r = 0; r < topo_.size(); ++r)
    if (r == 0 || topo_[r].nics < n) n = topo_[r].nics;
  return n > 0 ? n : 1;
}

double NodeLayout::oversubscription() const {
  double worst = 0;
  for (const auto& node : nodes_) {
    int cores = std::max(1, topo_[node.front()].cores);
    worst = std::max(worst, static_cast<double>(node.size()) / cores);
  }
  return worst;
}

std::vector<int> NodeLayout::ring(int channel, RingOrder order) const {
  std::vector<int> out;
  out.reserve(nodeOf_.size());
  if (order == RingOrder::kRank) {
    for (int r = 0; r < nranks(); ++r) out.push_back(r);
    return out;
  }
  for (const auto& node : nodes_) {
    // Rotating the node's ranks by the channel moves its entry and exit
    // points, so channels leave the node through different ranks.
    size_t m = node.size(), shift = static_cast<size_t>(channel) % m;
    for (size_t i = 0; i < m; ++i) out.push_back(node[(i + shift) % m]);
  }
  return out;
}

int NodeLayout::crossings(const std::vector<int>& ring) const {
  int n = 0;
  for (size_t i = 0; i < ring.size(); ++i)
    n += nodeOf_[ring[i]] != nodeOf_[ring[(i + 1) % ring.size()]];
  return n;
}

std::string NodeLayout::describe() const {
  std::string s = std::to_string(nranks()) + " rank(s) on " + std::to_string(nnodes()) + " node(s):";
  for (size_t n = 0; n < nodes_.size(); ++n) {
    s += " [";
    for (size_t i = 0; i < nodes_[n].size(); ++i) s += (i ? " " : "") + std::to_string(nodes_[n][i]);
    s += "]";
  }
  return s;
}

}  // namespace tutti
