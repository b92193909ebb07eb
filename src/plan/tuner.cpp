#include "src/plan/tuner.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "src/plan/planner.h"
#include "src/plan/tree.h"

namespace tutti {

namespace {

constexpr uint8_t kAll = (1u << kNumAlgorithms) - 1;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  return out;
}

// "ring,tree" or "^tree" -> a bit set of algorithms.
Result<uint8_t> parseAlgoList(const std::string& list) {
  std::string body = list;
  bool exclude = !body.empty() && body[0] == '^';
  if (exclude) body = body.substr(1);
  uint8_t bits = 0;
  for (const std::string& name : split(body, ',')) {
    if (name.empty()) continue;
    if (name == "ring") bits |= 1u << static_cast<int>(Algorithm::kRing);
    else if (name == "tree") bits |= 1u << static_cast<int>(Algorithm::kTree);
    else if (name == "oneshot") bits |= 1u << static_cast<int>(Algorithm::kOneShot);
    else if (name == "rd") bits |= 1u << static_cast<int>(Algorithm::kRecursiveDoubling);
    else if (name == "twolevel") bits |= 1u << static_cast<int>(Algorithm::kTwoLevel);
    else if (name == "hd") bits |= 1u << static_cast<int>(Algorithm::kHalvingDoubling);
    else return InvalidArgument("TUTTI_ALGO: unknown algorithm \"" + name +
                                "\" (tutti has ring, tree, oneshot, rd, twolevel and hd)");
  }
  return static_cast<uint8_t>(exclude ? (kAll & ~bits) : bits);
}

const char* const kCollectiveNames[kNumCollectives] = {"allreduce", "allgather", "broadcast",
                                                       "reduce", "reducescatter"};

double ceilDiv(double a, double b) { return std::ceil(a / b); }

}  // namespace

AlgoFilter::AlgoFilter() { std::fill(std::begin(allowed_), std::end(allowed_), kAll); }

Result<AlgoFilter> AlgoFilter::parse(const std::string& raw) {
  AlgoFilter f;
  std::string spec = lower(trim(raw));
  if (spec.empty()) return f;
  if (spec.find(':') == std::string::npos) {
    TUTTI_ASSIGN_OR_RETURN(uint8_t bits, parseAlgoList(spec));
    std::fill(std::begin(f.allowed_), std::end(f.allowed_), bits);
  } else {
    for (const std::string& part : split(spec, ';')) {
      if (part.empty()) continue;
      size_t colon = part.find(':');
      if (colon == std::string::npos)
        return InvalidArgument("TUTTI_ALGO: \"" + part + "\" needs the form collective:algorithms");
      std::string coll = trim(part.substr(0, colon));
      int index = -1;
      for (int i = 0; i < kNumCollectives; ++i)
        if (coll == kCollectiveNames[i]) index = i;
      if (index < 0)
        return InvalidArgument("TUTTI_ALGO: unknown collective \"" + coll +
                               "\" (allreduce, allgather, broadcast, reduce, reducescatter)");
      TUTTI_ASSIGN_OR_RETURN(f.allowed_[index], parseAlgoList(trim(part.substr(colon + 1))));
    }
  }
  for (int i = 0; i < kNumCollectives; ++i)
    if (f.allowed_[i] == 0)
      return InvalidArgument("TUTTI_ALGO=\"" + raw + "\" leaves no algorithm for " + kCollectiveNames[i]);
  return f;
}

bool AlgoFilter::allows(Collective c, Algorithm a) const {
  int i = static_cast<int>(c);
  if (i >= kNumCollectives) return a == Algorithm::kRing;
  return allowed_[i] & (1u << static_cast<int>(a));
}

TuneContext TuneContext::fromLayout(const NodeLayout& layout, const std::vector<int>& ring,
                                    int maxChannels, bool channelsForced, size_t maxChunkBytes) {
  TuneContext t;
  t.nranks = layout.nranks();
  t.nnodes = layout.nnodes();
  t.ranksPerNode = layout.maxRanksPerNode();
  t.ringCrossings = layout.crossings(ring);
  t.nodesAlike = twoLevelFits(layout, 1);
  for (int which = 0; which < 2; ++which)
    t.treeDepth = std::max(t.treeDepth, tutti::treeDepth(buildNodeTree(layout.nnodes(), which)));
  // Typical costs measured on commodity hosts: shared memory inside a node,
  // kernel TCP between nodes (one stream per channel).
  t.intra = {1.5, 0.5, 5.0, 10.0};
  t.net = {15.0, 4.0, 1.5, layout.minNetGbps() / 8.0 * 0.9};
  // Ranks outnumbering cores: every hop waits for a context switch.
  if (layout.oversubscription() > 1.0) {
    t.intra.latencyUs += 10.0;
    t.net.latencyUs += 10.0;
  }
  t.maxChannels = maxChannels;
  t.channelsForced = channelsForced;
  t.maxChunkBytes = maxChunkBytes;
  return t;
}

double predictUs(const TuneContext& t, Collective c, size_t bytes, Algorithm a, int nch,
                 size_t chunk) {
  const double n = t.nranks;
  const double S = static_cast<double>(bytes);
  const bool multiNode = t.nnodes > 1;
  auto bytesPerUs = [](double gbs) { return gbs * 1e3; };
  const double intraBw = std::min(nch * t.intra.channelGBs, t.intra.linkGBs);
  const double netBw = std::min(nch * t.net.channelGBs, t.net.linkGBs);
  if (n <= 1) return S / bytesPerUs(t.intra.linkGBs);

  if (a == Algorithm::kRing) {
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

  if (a == Algorithm::kOneShot) {
    const bool onBlock = t.hostBlock && !multiNode;
    if (n > (onBlock ? kHostBlockMaxRanks : kOneShotMaxRanks)) return 1e30;
    // Each message: the whole buffer, or a rank's block of a gathered or
    // scattered one. Every rank sends n-1 of them (rooted: the root sends or
    // receives them all), and a node's NIC carries those bound for other nodes.
    const bool blocks = c == Collective::kAllGather || c == Collective::kReduceScatter;
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
  if (a == Algorithm::kRecursiveDoubling) {
    // Past a couple of the one-shot channel's slots a round is a train of
    // chunk hand-overs, each a wake-up where ranks share cores.
    constexpr double kMaxBytes = 2.0 * kOneShotSlotBytes;
    if (!multiNode || n > kOneShotMaxRanks || S > kMaxBytes) return 1e30;
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

  // Two-level (two_level_plan.cpp): log2(ranks per node) rounds inside nodes
  // halving the data, rounds across nodes on one block of it (a node's ranks
  // at once: a node's link carries what one rank sends times its ranks), and
  // as many rounds inside doubling it back. Across, kTwoLevel swaps the
  // whole block each round; kHalvingDoubling halves it, then doubles back.
  if (a == Algorithm::kTwoLevel || a == Algorithm::kHalvingDoubling) {
    const bool halving = a == Algorithm::kHalvingDoubling;
    const double maxBytes = (halving ? kHalvingDoublingMaxBytes : kTwoLevelMaxBlocks * kOneShotSlotBytes) * t.ranksPerNode;
    // The one-shot channel's connections exist up to kOneShotMaxRanks.
    if (!multiNode || !t.nodesAlike || (!halving && t.ranksPerNode < 2) || n > kOneShotMaxRanks || S > maxBytes)
      return 1e30;
    int intraRounds = 0, nodes2 = 1, pairRounds = 0;
    while ((1 << intraRounds) < t.ranksPerNode) ++intraRounds;
    while (nodes2 * 2 <= t.nnodes) {
      nodes2 *= 2;
      ++pairRounds;
    }
    const double block = S / t.ranksPerNode;
    const int foldRounds = nodes2 < t.nnodes ? 2 : 0;  // the nodes past nodes2 in and out
    const int netRounds = foldRounds + (halving ? 2 : 1) * pairRounds;
    // What one rank sends across in all: the folds' whole blocks, and the
    // block once a round or 2(m-1)/m of it over the halving and doubling.
    const double sent = foldRounds * block + (halving ? 2 * block * (1 - 1.0 / nodes2) : pairRounds * block);
    const double chunkEff = std::max(1.0, std::min(static_cast<double>(chunk), block));
    const double chunksIntra = 2 * intraRounds * ceilDiv(S / 2, chunkEff);
    const double chunksNet = netRounds * ceilDiv(block / (halving ? 2 : 1), chunkEff);
    const double lat = 2 * intraRounds * t.intra.latencyUs + netRounds * t.net.latencyUs;
    const double over = 2 * (chunksIntra * t.intra.chunkOverheadUs + chunksNet * t.net.chunkOverheadUs);
    const double intraTime = 2 * (S - block) / bytesPerUs(t.intra.channelGBs);  // halving, doubling back
    const double netTime = std::max(sent / bytesPerUs(t.net.channelGBs), sent * t.ranksPerNode / bytesPerUs(t.net.linkGBs));
    return lat + over + intraTime + netTime;
  }

  // Tree: up the intra-node chain and across the node tree (and back down
  // for all-reduce); each node's links carry the whole message each way.
  // Inside one node the chain is as long as the ring: trees are for crossing
  // nodes (as in NCCL).
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

double calibratedUs(const TuneContext& t, Collective c, size_t bytes, Algorithm a, int nch, size_t chunk) {
  const double us = predictUs(t, c, bytes, a, nch, chunk);
  const int i = static_cast<int>(a);
  if (c != Collective::kAllReduce || i >= kNumAlgorithms || t.allReduce[i].points == 0) return us;
  // The measured over the modelled time at each measured size, between
  // them by log-size: one factor for every setting of one size, so the
  // model still ranks channels and chunks, and the measurements set the level.
  const TuneContext::Calibration& k = t.allReduce[i];
  const double S = std::max(1.0, static_cast<double>(bytes));
  int p = 0;
  while (p + 1 < k.points && S > k.bytes[p + 1]) ++p;
  if (S <= k.bytes[p]) return us * k.ratio[p];
  // Past the last measured size, never cheaper than the model: a ratio
  // below 1 there may be a cache's or a protocol's, not the size's.
  if (p + 1 >= k.points) return us * std::max(1.0, k.ratio[p]);
  const double f = std::log(S / k.bytes[p]) / std::log(k.bytes[p + 1] / k.bytes[p]);
  return us * (k.ratio[p] + f * (k.ratio[p + 1] - k.ratio[p]));
}

TuneChoice tune(const TuneContext& t, Collective c, size_t bytes, bool onDevice) {
  TuneChoice best;
  best.predictedUs = -1;
  for (int ai = 0; ai < kNumAlgorithms; ++ai) {
    const Algorithm a = static_cast<Algorithm>(ai);
    if (!algorithmSupports(a, c) || !t.filter.allows(c, a)) continue;
    // One-shot, recursive doubling and the two-level ones run on the one-shot
    // channel alone, whose connections to every rank exist from init: host
    // calls only.
    const bool oneChannel = onOneShotChannel(a);
    if (oneChannel && onDevice) continue;
    for (int nch = t.channelsForced && !oneChannel ? t.maxChannels : 1; nch <= (oneChannel ? 1 : t.maxChannels);
         ++nch) {
      for (size_t chunk = oneChannel ? kOneShotSlotBytes : t.maxChunkBytes; chunk >= 4096 && chunk * 32 >= t.maxChunkBytes; chunk /= 2) {
        if (oneChannel && chunk < kOneShotSlotBytes) break;  // its slots' size
        // The calibration timed host calls; device calls run kernels and P2P.
        double us = onDevice ? predictUs(t, c, bytes, a, nch, chunk) : calibratedUs(t, c, bytes, a, nch, chunk);
        if (best.predictedUs < 0 || us < best.predictedUs * 0.999) {
          best = {a, nch, chunk, us};
        }
      }
    }
  }
  if (best.predictedUs < 0) best = {Algorithm::kRing, t.channelsForced ? t.maxChannels : 1, t.maxChunkBytes, 0};
  return best;
}

}  // namespace tutti
