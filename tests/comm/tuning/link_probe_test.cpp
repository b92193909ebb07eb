// The link measurement's rank arithmetic (who passes to whom in each round)
// and how its figures enter the cost model.
#include <gtest/gtest.h>

#include <vector>

#include "src/comm/tuning/link_probe.h"

namespace tutti {
namespace {

// Every taking part passes to one rank and takes from one, and the rounds
// are permutations of those taking part: no rank waits on one that sits out.
void expectPermutation(const NodeLayout& layout, LinkRound (*round)(const NodeLayout&, int), bool sameNode) {
  const int n = layout.nranks();
  std::vector<int> takenBy(n, -1);
  for (int r = 0; r < n; ++r) {
    const LinkRound me = round(layout, r);
    if (me.next < 0) continue;
    EXPECT_EQ(round(layout, me.next).prev, r) << "rank " << r;
    EXPECT_EQ(round(layout, me.prev).next, r) << "rank " << r;
    EXPECT_EQ(layout.nodeOf(me.next) == layout.nodeOf(r), sameNode) << "rank " << r;
    EXPECT_EQ(takenBy[me.next], -1) << "two ranks pass to " << me.next;
    takenBy[me.next] = r;
  }
}

TEST(LinkProbe, RoundsArePermutationsInsideAndAcrossNodes) {
  for (int nodes : {1, 2, 3, 4})
    for (int per : {1, 2, 3})
      for (bool interleaved : {false, true}) {
        NodeLayout l = NodeLayout::uniform(nodes, per, interleaved, 1, 10, 2);
        SCOPED_TRACE(l.describe());
        expectPermutation(l, intraRound, true);
        expectPermutation(l, netRound, false);
        for (int r = 0; r < l.nranks(); ++r) {
          EXPECT_EQ(intraRound(l, r).next >= 0, per > 1);
          EXPECT_EQ(netRound(l, r).next >= 0, nodes > 1);
          if (nodes > 1) {
            EXPECT_EQ(netRound(l, r).streams, per);  // a node's ranks all stream
            // Across: the same place on the next node.
            EXPECT_EQ(l.localIndex(netRound(l, r).next), l.localIndex(r));
          }
        }
      }
}

TEST(LinkProbe, UnevenNodesMeasureBetweenTheirFirstRanks) {
  std::vector<RankTopo> ranks(5);
  for (int r = 0; r < 5; ++r) ranks[r].hostHash = r < 3 ? 1 : 2;  // 3 ranks, then 2
  NodeLayout l(ranks);
  expectPermutation(l, netRound, false);
  EXPECT_EQ(netRound(l, 0).next, 3);
  EXPECT_EQ(netRound(l, 3).next, 0);
  EXPECT_EQ(netRound(l, 0).streams, 1);
  for (int r : {1, 2, 4}) EXPECT_LT(netRound(l, r).next, 0) << "rank " << r;
}

// Measured figures replace the typical ones, and move the model's answers:
// a slow, far network makes every multi-node call dearer.
TEST(LinkProbe, MeasuredFiguresPriceTheModel) {
  NodeLayout l = NodeLayout::uniform(2, 2, false, 1, 10, 4);
  TuneContext typical = TuneContext::fromLayout(l, l.ring(0, RingOrder::kTopo), 2, false, 128 << 10);
  TuneContext measured = typical;
  MeasuredLinks links;
  links.intra = {true, 4.0, 3.0, 2};
  links.net = {true, 120.0, 0.4, 2};
  applyMeasuredLinks(links, &measured);
  EXPECT_EQ(measured.intra.latencyUs, 4.0);
  EXPECT_EQ(measured.intra.channelGBs, 3.0);
  EXPECT_EQ(measured.net.latencyUs, 120.0);
  EXPECT_EQ(measured.net.channelGBs, 0.4);
  EXPECT_DOUBLE_EQ(measured.net.linkGBs, 0.8);  // two streams shared the node's link
  for (size_t bytes : {size_t(8), size_t(1) << 20, size_t(64) << 20})
    EXPECT_GT(tune(measured, Collective::kAllReduce, bytes).predictedUs,
              tune(typical, Collective::kAllReduce, bytes).predictedUs)
        << bytes;
  // What was not measured keeps its typical value.
  TuneContext half = typical;
  MeasuredLinks netOnly;
  netOnly.net = links.net;
  applyMeasuredLinks(netOnly, &half);
  EXPECT_EQ(half.intra.latencyUs, typical.intra.latencyUs);
  EXPECT_EQ(half.net.latencyUs, 120.0);
}

}  // namespace
}  // namespace tutti

namespace tutti {
namespace {

// The all-reduce calibration: measured over predicted at the measured
// sizes, by log-size between them, the last level past the last size (its
// increments no faster than the model's); other collectives and
// uncalibrated algorithms keep the model's figure.
TEST(LinkProbe, CalibrationSetsTheLevelAndKeepsTheShape) {
  NodeLayout l = NodeLayout::uniform(2, 2, false, 1, 10, 2);
  TuneContext t = TuneContext::fromLayout(l, l.ring(0, RingOrder::kTopo), 2, false, 128 << 10);
  TuneContext::Calibration& ring = t.allReduce[static_cast<int>(Algorithm::kRing)];
  ring.points = 3;  // of TuneContext::kCalibrationPoints
  const double bytes[] = {8, 256, 4 << 20}, ratio[] = {0.5, 1.0, 2.0};
  for (int p = 0; p < 3; ++p) {
    ring.bytes[p] = bytes[p];
    ring.ratio[p] = ratio[p];
  }
  auto raw = [&](Collective c, size_t b, Algorithm a) { return predictUs(t, c, b, a, 1, 128 << 10); };
  auto cal = [&](Collective c, size_t b, Algorithm a) { return calibratedUs(t, c, b, a, 1, 128 << 10); };
  const Collective ar = Collective::kAllReduce;
  EXPECT_DOUBLE_EQ(cal(ar, 8, Algorithm::kRing), 0.5 * raw(ar, 8, Algorithm::kRing));
  EXPECT_DOUBLE_EQ(cal(ar, 256, Algorithm::kRing), 1.0 * raw(ar, 256, Algorithm::kRing));
  EXPECT_DOUBLE_EQ(cal(ar, 4 << 20, Algorithm::kRing), 2.0 * raw(ar, 4 << 20, Algorithm::kRing));
  EXPECT_DOUBLE_EQ(cal(ar, 64 << 20, Algorithm::kRing), 2.0 * raw(ar, 64 << 20, Algorithm::kRing));
  // Past the last size, a ratio below 1 keeps the measured level there and
  // adds the model's increments at the model's rate: a call below the
  // sockets' buffers can beat the link, a longer one cannot. (The ratio
  // alone, 0.39 for a tree at 1 MiB on 4 x 1 namespace nodes, priced it at
  // 64 MiB at 0.46x its time, and the tree was chosen there over a
  // halving-doubling 1.3x as fast.)
  ring.ratio[2] = 0.5;
  const double at4m = raw(ar, 4 << 20, Algorithm::kRing);
  EXPECT_DOUBLE_EQ(cal(ar, 4 << 20, Algorithm::kRing), 0.5 * at4m);
  EXPECT_DOUBLE_EQ(cal(ar, 64 << 20, Algorithm::kRing), 0.5 * at4m + raw(ar, 64 << 20, Algorithm::kRing) - at4m);
  ring.ratio[2] = 2.0;
  // Halfway in log-size between 8 and 256 bytes (45 B): halfway in ratio.
  EXPECT_NEAR(cal(ar, 45, Algorithm::kRing) / raw(ar, 45, Algorithm::kRing), 0.75, 0.01);
  EXPECT_DOUBLE_EQ(cal(Collective::kBroadcast, 4 << 20, Algorithm::kRing),
                   raw(Collective::kBroadcast, 4 << 20, Algorithm::kRing));
  EXPECT_DOUBLE_EQ(cal(ar, 4 << 20, Algorithm::kTree), raw(ar, 4 << 20, Algorithm::kTree));
  // The choice follows: a ring measured 10x dearer than modelled loses to the tree.
  ring.ratio[0] = ring.ratio[1] = ring.ratio[2] = 10;
  EXPECT_NE(tune(t, ar, 4 << 20).algorithm, Algorithm::kRing);
  ring.ratio[0] = ring.ratio[1] = ring.ratio[2] = 0.01;
  EXPECT_EQ(tune(t, ar, 4 << 20).algorithm, Algorithm::kRing);
}

// Past its last measured size an algorithm's ratio grows as init saw the
// link's grow: a ring measured at 0.8x its model at 1 MiB and 1.2x at 4 MiB
// prices halving-doubling's increments past its 1 MiB at 1.5x its ratio there.
TEST(LinkProbe, PastItsLastSizeAnAlgorithmSlowsAsInitSawTheLinkSlow) {
  NodeLayout l = NodeLayout::uniform(4, 1, false, 1, 4, 2);
  TuneContext t = TuneContext::fromLayout(l, l.ring(0, RingOrder::kTopo), 1, false, 128 << 10);
  auto calibrate = [&](Algorithm a, std::vector<double> bytes, std::vector<double> ratio) {
    TuneContext::Calibration& k = t.allReduce[static_cast<int>(a)];
    k.points = static_cast<int>(bytes.size());
    for (int p = 0; p < k.points; ++p) {
      k.bytes[p] = bytes[p];
      k.ratio[p] = ratio[p];
    }
  };
  calibrate(Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 1 << 20}, {1, 1, 1, 1});
  calibrate(Algorithm::kRing, {8, 256, 1 << 20, 4 << 20}, {1, 1, 0.8, 1.2});
  const Collective ar = Collective::kAllReduce;
  const Algorithm hd = Algorithm::kHalvingDoubling;
  auto raw = [&](size_t b) { return predictUs(t, ar, b, hd, 1, 128 << 10); };
  auto cal = [&](size_t b) { return calibratedUs(t, ar, b, hd, 1, 128 << 10); };
  auto past1M = [&](size_t b, double rate) { return raw(1 << 20) + rate * (raw(b) - raw(1 << 20)); };
  EXPECT_DOUBLE_EQ(cal(1 << 20), raw(1 << 20));
  EXPECT_DOUBLE_EQ(cal(16 << 20), past1M(16 << 20, 1.5));  // the ring's growth to its 4 MiB
  EXPECT_DOUBLE_EQ(cal(2 << 20), past1M(2 << 20, 1.0 / 0.8));  // the ring's 2 MiB: halfway by log-size
  // Below its model at its last size, it keeps the model's rate unless the growth outdoes it.
  calibrate(Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 1 << 20}, {1, 1, 1, 0.6});
  EXPECT_DOUBLE_EQ(cal(16 << 20), 0.6 * raw(1 << 20) + 1.0 * (raw(16 << 20) - raw(1 << 20)));
  calibrate(Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 1 << 20}, {1, 1, 1, 1});
  // A ring kept from earlier runs at 16 MiB tells of the ring: init's sizes set the growth.
  calibrate(Algorithm::kRing, {8, 256, 1 << 20, 4 << 20, 16 << 20}, {1, 1, 0.8, 1.2, 3.0});
  EXPECT_DOUBLE_EQ(cal(16 << 20), past1M(16 << 20, 1.5));
  // A link that ran longer calls closer to the model: the model's rate.
  calibrate(Algorithm::kRing, {8, 256, 1 << 20, 4 << 20}, {1, 1, 1.2, 0.9});
  EXPECT_DOUBLE_EQ(cal(16 << 20), raw(16 << 20));
  // Measured to 512 KiB: the algorithms whose sizes span it (trees and
  // two-level, 64 KiB and 1 MiB), the least growth of them.
  calibrate(Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 512 << 10}, {1, 1, 1, 1});
  calibrate(Algorithm::kTree, {8, 256, 64 << 10, 1 << 20}, {1, 1, 1, 1.6});
  calibrate(Algorithm::kTwoLevel, {8, 256, 64 << 10, 1 << 20}, {1, 1, 1, 1.3});
  // (512 KiB lies 3/4 of the way from 64 KiB to 1 MiB by log-size.)
  EXPECT_NEAR(cal(1 << 20), raw(512 << 10) + 1.3 / (1 + 0.75 * 0.3) * (raw(1 << 20) - raw(512 << 10)), 1e-6);
  // None measured past its last size: the model's rate.
  calibrate(Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 1 << 20}, {1, 1, 1, 1});
  calibrate(Algorithm::kRing, {8, 256, 1 << 20}, {1, 1, 1});
  calibrate(Algorithm::kTree, {}, {});
  calibrate(Algorithm::kTwoLevel, {}, {});
  EXPECT_DOUBLE_EQ(cal(16 << 20), raw(16 << 20));
}

}  // namespace
}  // namespace tutti
