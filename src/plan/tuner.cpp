#include "src/plan/tuner.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "src/plan/algorithms.h"
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
    const AlgorithmEntry* e = algorithmNamed(name.c_str());
    if (!e || !e->costUs) {
      std::string names;
      for (int a = 0; a < kNumAlgorithms; ++a)
        names += std::string(a == 0 ? "" : a + 1 == kNumAlgorithms ? " and " : ", ") +
                 algorithmEntry(static_cast<Algorithm>(a)).name;
      return InvalidArgument("TUTTI_ALGO: unknown algorithm \"" + name + "\" (tutti has " + names + ")");
    }
    bits |= 1u << static_cast<int>(e->id);
  }
  return static_cast<uint8_t>(exclude ? (kAll & ~bits) : bits);
}

const char* const kCollectiveNames[kNumCollectives] = {"allreduce", "allgather", "broadcast",
                                                       "reduce", "reducescatter"};

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

TuneContext restrictedTo(const TuneContext& t, Algorithm a) {
  TuneContext only = t;
  only.filter = AlgoFilter::parse(algorithmEntry(a).name).value();
  only.slowDrawFactor = 1;  // measured times are typical ones
  for (TuneContext::Calibration& k : only.allReduce) k.slowDraw = 0;
  return only;
}

double predictUs(const TuneContext& t, Collective c, size_t bytes, Algorithm a, int nch, size_t chunk) {
  if (t.nranks <= 1) return static_cast<double>(bytes) / (t.intra.linkGBs * 1e3);
  const AlgorithmEntry& e = algorithmEntry(a);
  return e.costUs && e.implements(c) ? e.costUs(t, c, bytes, nch, chunk) : 1e30;
}

namespace {

// How much more slowly than modelled the link ran longer calls: over
// init's two measured sizes of another algorithm that span `from`, its
// measured-over-modelled ratio at S (at most its larger size) over its
// ratio at `from`, the least of them; 1 where none spans `from`. Init's
// sizes only: a size kept from earlier runs' calls tells of the algorithm
// they chose (a ring kept slow at 64 MiB hands such calls on).
double linkGrowth(const TuneContext& t, double from, double S) {
  double least = 0;
  for (int b = 0; b < kNumAlgorithms; ++b) {
    const TuneContext::Calibration& k = t.allReduce[b];
    const AlgorithmEntry& e = algorithmEntry(static_cast<Algorithm>(b));
    double r[2] = {0, 0};
    for (int p = 0; p < k.points; ++p)
      for (int i = 0; i < 2; ++i)
        if (k.bytes[p] == e.calibrationBytes[i]) r[i] = k.ratio[p];
    const double lo = e.calibrationBytes[0], hi = e.calibrationBytes[1];
    if (r[0] <= 0 || r[1] <= 0 || !(lo <= from && from < hi)) continue;
    auto at = [&](double x) { return r[0] + std::log(x / lo) / std::log(hi / lo) * (r[1] - r[0]); };
    const double g = at(std::min(S, hi)) / at(from);
    least = least > 0 ? std::min(least, g) : g;
  }
  return least > 0 ? least : 1.0;
}

// Whether an all-reduce's price at `bytes` rests on a time measured near
// that size (init's or kept from earlier runs), rather than carried past
// the algorithm's last measured size.
bool measuredNear(const TuneContext& t, Collective c, Algorithm a, size_t bytes) {
  const int i = static_cast<int>(a);
  if (c != Collective::kAllReduce || i >= kNumAlgorithms) return false;
  const TuneContext::Calibration& k = t.allReduce[i];
  return k.points > 0 && static_cast<double>(bytes) <= 2 * k.bytes[k.points - 1];
}

// A price carried past an algorithm's last measured size must beat one
// measured near the call's size by this much to win: on 4 x 1 namespace
// nodes with 4 Gbit/s links, halving-doubling priced from its 2 MiB a
// little below a ring's kept 16 MiB took 77 ms where the ring took 53
// (bench/results/slow_draws_by_algorithm.md). Where every price is carried
// (a new cluster's large calls) the ranking is as before.
constexpr double kCarriedPriceMargin = 1.05;

}  // namespace

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
  // Past the last measured size the model's shape carries on from the
  // measured level, its increments no faster than the model's own rate: a
  // call the sockets' buffers hold can beat the link's measured rate, a
  // longer one cannot. And its ratio grows as init saw the link's grow past
  // that size (linkGrowth): on 4 x 1 namespace nodes with 4 Gbit/s links a
  // ring ran 0.85x its model at 1 MiB and 0.98x at 4 MiB; halving-doubling,
  // measured to 1 MiB at 0.99x, was priced below it at 16 MiB, where it
  // took 62-68 ms to the ring's 53-56 (1.17-1.24x its model from 4 MiB).
  if (p + 1 >= k.points) {
    const double atLast = predictUs(t, c, static_cast<size_t>(k.bytes[p]), a, nch, chunk);
    const double rate = std::max(1.0, k.ratio[p] * std::max(1.0, linkGrowth(t, k.bytes[p], S)));
    return atLast * k.ratio[p] + (us - atLast) * rate;
  }
  const double f = std::log(S / k.bytes[p]) / std::log(k.bytes[p + 1] / k.bytes[p]);
  return us * (k.ratio[p] + f * (k.ratio[p + 1] - k.ratio[p]));
}

TuneChoice tune(const TuneContext& t, Collective c, size_t bytes, bool onDevice) {
  TuneChoice best;
  best.predictedUs = -1;
  double bestRank = 0;  // best's price, with kCarriedPriceMargin where it applies
  for (int ai = 0; ai < kNumAlgorithms; ++ai) {
    const Algorithm a = static_cast<Algorithm>(ai);
    const AlgorithmEntry& e = algorithmEntry(a);
    if (!e.implements(c) || !t.filter.allows(c, a)) continue;
    // Those of the one-shot channel run on it alone: host calls only.
    const bool oneChannel = e.oneShotChannel;
    if (oneChannel && onDevice) continue;
    const double margin = onDevice || measuredNear(t, c, a, bytes) ? 1.0 : kCarriedPriceMargin;
    for (int nch = t.channelsForced && !oneChannel ? t.maxChannels : 1; nch <= (oneChannel ? 1 : t.maxChannels);
         ++nch) {
      for (size_t chunk = oneChannel ? kOneShotSlotBytes : t.maxChunkBytes; chunk >= 4096 && chunk * 32 >= t.maxChunkBytes; chunk /= 2) {
        if (oneChannel && chunk < kOneShotSlotBytes) break;  // its slots' size
        // The calibration timed host calls; device calls run kernels and P2P.
        double us = onDevice ? predictUs(t, c, bytes, a, nch, chunk) : calibratedUs(t, c, bytes, a, nch, chunk);
        if (best.predictedUs < 0 || us * margin < bestRank * 0.999) {
          best = {a, nch, chunk, us};
          bestRank = us * margin;
        }
      }
    }
  }
  if (best.predictedUs < 0) best = {Algorithm::kRing, t.channelsForced ? t.maxChannels : 1, t.maxChunkBytes, 0};
  if (!onDevice) {
    const int i = static_cast<int>(best.algorithm);
    const bool own = c == Collective::kAllReduce && i < kNumAlgorithms && t.allReduce[i].slowDraw > 0;
    best.predictedUs *= own ? t.allReduce[i].slowDraw : t.slowDrawFactor;
  }
  return best;
}

}  // namespace tutti
