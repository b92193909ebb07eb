// Where the ranks are: grouped by node (host), with what each node's network
// offers. Built from every rank's RankTopo, gathered at init; everything the
// planner and the cost model know about the machine comes from here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tutti {

// One rank's view of its machine, as gathered (fixed size, plain bytes).
struct RankTopo {
  uint64_t hostHash = 0;
  int32_t nics = 1;         // network interfaces this rank may use
  float netGbps = 10;       // their total speed (unknown speeds count as 10)
  int32_t cores = 1;        // cores this rank may run on
  int32_t reserved = 0;
};

enum class RingOrder { kTopo, kRank };

class NodeLayout {
 public:
  NodeLayout() = default;
  explicit NodeLayout(const std::vector<RankTopo>& ranks);
  // A synthetic layout: `nodes` nodes of `ranksPerNode` ranks each, rank r on
  // node r / ranksPerNode (blocked) or r % nodes (interleaved).
  static NodeLayout uniform(int nodes, int ranksPerNode, bool interleaved, int nicsPerNode,
                            float netGbps, int coresPerNode);

  int nranks() const { return static_cast<int>(nodeOf_.size()); }
  int nnodes() const { return static_cast<int>(nodes_.size()); }
  int nodeOf(int rank) const { return nodeOf_[rank]; }
  int localIndex(int rank) const { return localIndex_[rank]; }
  const std::vector<int>& ranksOf(int node) const { return nodes_[node]; }
  int maxRanksPerNode() const;
  // The slowest node's network (Gbit/s) and NIC count: what crossings get.
  float minNetGbps() const;
  int minNics() const;
  // Ranks per core on the busiest node: above 1 every hop pays a context switch.
  double oversubscription() const;

  // The ring of channel `c`: kTopo keeps each node's ranks together, rotated
  // by channel so different ranks (and NICs) carry each channel's crossings;
  // kRank is plain rank order.
  std::vector<int> ring(int channel, RingOrder order) const;
  // How many ring edges cross between nodes.
  int crossings(const std::vector<int>& ring) const;

  std::string describe() const;

 private:
  std::vector<std::vector<int>> nodes_;  // ranks of each node, ascending; nodes by lowest rank
  std::vector<int> nodeOf_, localIndex_;
  std::vector<RankTopo> topo_;
};

}  // namespace tutti
