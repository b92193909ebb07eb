#include "src/plan/costs.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "src/plan/planner.h"

namespace tutti {

namespace {

double bytesPerUs(double gbs) { return gbs * 1e3; }

// Across nodes, the largest buffer an algorithm sends whole to each peer in
// one round (recursive doubling, and one-shot's all-reduce, reduce and
// broadcast). Past it a round is a train of chunk hand-overs, each a
// wake-up where ranks share cores, and a pipeline moves the bytes better;
// one-shot's link carries n - 1 times the buffer besides. One-shot priced
// past it from its 16 KiB calibration, one launch of six on 4 x 1
// namespace nodes chose it at 8 and 32 MiB and took 29 and 137 ms, where
// the others' halving-doubling took 16-28 and 67-84; a run's second pass
// chose it at 64 MiB and took 210 ms (bench/results/link_probe_size.md).
constexpr double kWholeBufferAcrossMaxBytes = 64 << 10;
double ceilDiv(double a, double b) { return std::ceil(a / b); }

// What every price starts from: ranks, bytes, whether links cross nodes,
// and what `nch` channels drive inside a node and across.
std::tuple<double, double, bool, double, double> termsOf(const TuneContext& t, size_t bytes, int nch) {
  return {static_cast<double>(t.nranks), static_cast<double>(bytes), t.nnodes > 1,
          std::min(nch * t.intra.channelGBs, t.intra.linkGBs), std::min(nch * t.net.channelGBs, t.net.linkGBs)};
}

// Two-level (two_level_plan.cpp): log2(ranks per node) rounds inside nodes
// halving the data into a block for each rank that crosses (the others
// hand theirs on whole), rounds across nodes on one block of it (a node's
// crossers at once: a node's link carries what one sends times their
// number), and as many rounds inside doubling it back. Across, kTwoLevel swaps the
// whole block each round; kHalvingDoubling halves it, then doubles back,
// or across a number of nodes that is not a power of two passes it round
// a ring of them.
double twoLevelUs(const TuneContext& t, size_t bytes, int nch, size_t chunk, bool halving) {
  const auto [n, S, multiNode, intraBw, netBw] = termsOf(t, bytes, nch);
  const double maxBytes = kTwoLevelMaxBytes * t.ranksPerNode;
  // The one-shot channel's connections exist up to kOneShotMaxRanks.
  if (!multiNode || !t.nodesAlike || (!halving && t.ranksPerNode < 2) || n > kOneShotMaxRanks || S > maxBytes)
    return 1e30;
  int intraRounds = 0, nodes2 = 1, pairRounds = 0;
  while ((1 << intraRounds) < t.ranksPerNode) ++intraRounds;
  while (nodes2 * 2 <= t.nnodes) {
    nodes2 *= 2;
    ++pairRounds;
  }
  const int crossers = twoLevelCrossers(bytes, t.ranksPerNode);
  int splitRounds = 0;  // the rounds inside that halve; the rest hand a block on whole
  while ((1 << splitRounds) < crossers) ++splitRounds;
  const double block = S / crossers;
  // A pipelined call's segments (twoLevelSegments) each take the rounds
  // below; the chunks are counted over one segment, then times G.
  const int G = halving ? twoLevelSegments(bytes, t.ranksPerNode, kTwoLevelSegmentBytes) : 1;
  const double chunkEff = std::max(1.0, std::min(static_cast<double>(chunk), block / G));
  const double chunksIntra = 2 * intraRounds * G * ceilDiv(S / G / 2, chunkEff);
  const bool ring = halving && nodes2 < t.nnodes;
  const int foldRounds = nodes2 < t.nnodes && !ring ? 2 : 0;  // the nodes past nodes2 in and out
  const int m = t.nnodes;
  const int netRounds = ring ? 2 * (m - 1) : foldRounds + (halving ? 2 : 1) * pairRounds;
  // What one rank sends across in all: the folds' whole blocks, and the
  // block once a round or 2(m-1)/m of it over the halving and doubling (or
  // the ring).
  const double sent = ring ? 2 * block * (m - 1) / m
                           : foldRounds * block + (halving ? 2 * block * (1 - 1.0 / nodes2) : pairRounds * block);
  // The folds move whole blocks; halving's rounds a half, a quarter, ... of
  // it, then as much again doubling back; a ring's hops an m-th.
  const double seg = block / G;
  double chunksNet = ring ? netRounds * ceilDiv(seg / m, chunkEff) : foldRounds * ceilDiv(seg, chunkEff);
  for (int k = 1; k <= pairRounds && !ring; ++k)
    chunksNet += halving ? 2 * ceilDiv(seg / (1 << k), chunkEff) : ceilDiv(seg, chunkEff);
  chunksNet *= G;
  const double lat = 2 * intraRounds * t.intra.latencyUs + G * netRounds * t.net.latencyUs;
  const double intraBytes = S - block + (intraRounds - splitRounds) * block;
  // Halving, then doubling back; across, the link's share of each crosser.
  const double inside = 2 * chunksIntra * t.intra.chunkOverheadUs + 2 * intraBytes / bytesPerUs(t.intra.channelGBs);
  const double acrossNodes = 2 * chunksNet * t.net.chunkOverheadUs +
                             std::max(sent / bytesPerUs(t.net.channelGBs), sent * crossers / bytesPerUs(t.net.linkGBs));
  // Pipelined, the rounds inside hide behind those across but for the
  // first segment's reduction and the last one's gathering.
  if (G > 1) return lat + std::max(inside, acrossNodes) + inside / G;
  return lat + inside + acrossNodes;
}

}  // namespace

double ringCostUs(const TuneContext& t, Collective c, size_t bytes, int nch, size_t chunk) {
  const auto [n, S, multiNode, intraBw, netBw] = termsOf(t, bytes, nch);
  const double f = static_cast<double>(t.ringCrossings) / n;  // share of hops between nodes
  const double hopLat = f * t.net.latencyUs + (1 - f) * t.intra.latencyUs;
  const double hopOver = f * t.net.chunkOverheadUs + (1 - f) * t.intra.chunkOverheadUs;
  const bool rooted = c == Collective::kBroadcast || c == Collective::kReduce;
  const double steps = c == Collective::kAllReduce ? 2 * (n - 1) : rooted ? 1 : n - 1;
  const double hops = c == Collective::kAllReduce ? 2 * (n - 1) : n - 1;
  const double block = rooted ? S / nch : S / n / nch;  // what one step moves per channel
  const double chunkEff = std::max(1.0, std::min(static_cast<double>(chunk), block));
  const double chunks = ceilDiv(block, chunkEff);
  const double moved = steps * block * nch;  // bytes each rank sends
  // Every node's NIC carries its share of the ring's crossings.
  const double perNic = multiNode ? static_cast<double>(t.ringCrossings) / t.nnodes : 0;
  double bwTime = moved / bytesPerUs(intraBw);
  if (multiNode) bwTime = std::max(bwTime, moved * perNic / bytesPerUs(netBw));
  const double fill = hops * chunkEff / bytesPerUs(multiNode ? t.net.channelGBs : t.intra.channelGBs);
  return hops * hopLat + steps * chunks * nch * hopOver + bwTime + fill;
}

double oneShotCostUs(const TuneContext& t, Collective c, size_t bytes, int nch, size_t chunk) {
  const auto [n, S, multiNode, intraBw, netBw] = termsOf(t, bytes, nch);
  const bool onBlock = t.hostBlock && !multiNode;
  if (n > (onBlock ? kHostBlockMaxRanks : kOneShotMaxRanks)) return 1e30;
  // Each message: the whole buffer, or a rank's block of a gathered or
  // scattered one. Every rank sends n-1 of them (rooted: the root sends or
  // receives them all), and a node's NIC carries those bound for other nodes.
  const bool blocks = c == Collective::kAllGather || c == Collective::kReduceScatter;
  if (multiNode && !blocks && S > kWholeBufferAcrossMaxBytes) return 1e30;
  const double message = blocks ? S / n : S;
  const double chunkEff = std::max(1.0, std::min(static_cast<double>(chunk), message / nch));
  const double messages = (n - 1) * ceilDiv(message / nch, chunkEff) * nch;
  const LinkCost& link = multiNode ? t.net : t.intra;
  double bwTime = (n - 1) * message / bytesPerUs(intraBw);
  const double input = c == Collective::kAllGather ? message : S;  // what a rank writes into its slot
  // One host: the block's slots, or not at all. A rank copies its input in
  // and reads what it needs where it lies (a broadcast's reader one chunk,
  // the others n - 1): bare copies by one core, with none of a channel's
  // flags and handshakes. Modelled at a channel's rate, a 64 KiB broadcast
  // went to rings that took 1.5x one-shot's time.
  if (onBlock) {
    if (input > static_cast<double>(hostBlockShape(n).slotBytes)) return 1e30;
    const double reads = c == Collective::kBroadcast ? message : (n - 1) * message;
    return link.latencyUs / 2 + (input + reads) / bytesPerUs(kOneCoreCopyGBs);
  }
  if (multiNode) bwTime = std::max(bwTime, t.ranksPerNode * (n - t.ranksPerNode) * message / bytesPerUs(netBw));
  return link.latencyUs + 2 * messages * link.chunkOverheadUs + bwTime;
}

// Recursive doubling: log2(p2) rounds, the first inside nodes while the
// node's ranks (in ring order, powers of two) pair up, then across; a
// rank not among the p2 first adds a round in and one out. Each round
// every rank sends the whole buffer, a node's ranks at once over its link.
double recursiveDoublingCostUs(const TuneContext& t, Collective, size_t bytes, int nch, size_t chunk) {
  const auto [n, S, multiNode, intraBw, netBw] = termsOf(t, bytes, nch);
  if (!multiNode || n > kOneShotMaxRanks || S > kWholeBufferAcrossMaxBytes) return 1e30;
  int p2 = 1, rounds = 0;
  while (p2 * 2 <= t.nranks) {
    p2 *= 2;
    ++rounds;
  }
  int intraRounds = 0;
  while (intraRounds < rounds && (2 << intraRounds) <= t.ranksPerNode) ++intraRounds;
  const int netRounds = rounds - intraRounds + (p2 < t.nranks ? 2 : 0);
  const double chunkEff = std::max(1.0, std::min(static_cast<double>(chunk), S));
  const double chunks = ceilDiv(S, chunkEff);
  const double lat = intraRounds * t.intra.latencyUs + netRounds * t.net.latencyUs;
  const double over = chunks * 2 * (intraRounds * t.intra.chunkOverheadUs + netRounds * t.net.chunkOverheadUs);
  const double bwTime = intraRounds * S / bytesPerUs(t.intra.channelGBs) +
                        netRounds * S * t.ranksPerNode / bytesPerUs(t.net.linkGBs);
  return lat + over + bwTime;
}

double twoLevelCostUs(const TuneContext& t, Collective, size_t bytes, int nch, size_t chunk) {
  return twoLevelUs(t, bytes, nch, chunk, false);
}

double halvingDoublingCostUs(const TuneContext& t, Collective, size_t bytes, int nch, size_t chunk) {
  return twoLevelUs(t, bytes, nch, chunk, true);
}

// Tree: up the intra-node chain and across the node tree (and back down
// for all-reduce); each node's links carry the whole message each way.
// Inside one node the chain is as long as the ring: trees are for crossing
// nodes (as in NCCL).
double treeCostUs(const TuneContext& t, Collective c, size_t bytes, int nch, size_t chunk) {
  const auto [n, S, multiNode, intraBw, netBw] = termsOf(t, bytes, nch);
  if (!multiNode) return 1e30;
  const double ways = c == Collective::kAllReduce ? 2 : 1;
  const double chain = t.ranksPerNode - 1;
  const double lat = ways * (t.treeDepth * t.net.latencyUs + chain * t.intra.latencyUs);
  const double perChannel = S / nch;
  const double chunkEff = std::max(1.0, std::min(static_cast<double>(chunk), perChannel));
  const double chunks = ceilDiv(perChannel, chunkEff);
  const double stepsPerChunk = ways * 3;  // a node head: up to three children
  const double over = chunks * nch * stepsPerChunk *
                      (multiNode ? t.net.chunkOverheadUs : t.intra.chunkOverheadUs);
  constexpr double kTreeEfficiency = 0.8;  // fan-in and fan-out share one thread
  double bwTime = ways * S / bytesPerUs(intraBw) / kTreeEfficiency;
  if (multiNode) bwTime = std::max(bwTime, ways * S / bytesPerUs(netBw) / kTreeEfficiency);
  const double hops = ways * (t.treeDepth + chain);
  const double fill = hops * chunkEff / bytesPerUs(multiNode ? t.net.channelGBs : t.intra.channelGBs);
  return lat + over + bwTime + fill;
}

}  // namespace tutti
