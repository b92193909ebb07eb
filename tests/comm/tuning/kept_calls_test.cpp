// Large all-reduces' times kept between runs: which calls are timed, how
// runs merge, the file (and what a stranger's file gets), and how kept
// times move the model's choice.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/comm/tuning/kept_calls.h"
#include "src/comm/tuning/link_probe.h"
#include "src/common/text_file.h"
#include "tests/harness/files.h"

namespace tutti {
namespace {

constexpr double MiB = 1 << 20;

KeptCall call(Algorithm a, double bytes, double us, double calls) {
  return {static_cast<int32_t>(a), bytes, us, calls};
}

// From the middle size init calibrates each algorithm at; never the
// ordered all-reduce, which the model does not price.
TEST(KeptCalls, CallsFromTheMiddleCalibratedSizeOnAreTimed) {
  EXPECT_FALSE(worthKeeping(Algorithm::kRing, 512 << 10));
  EXPECT_TRUE(worthKeeping(Algorithm::kRing, 1 << 20));
  EXPECT_TRUE(worthKeeping(Algorithm::kRing, 4 << 20));
  EXPECT_FALSE(worthKeeping(Algorithm::kHalvingDoubling, 32 << 10));
  EXPECT_TRUE(worthKeeping(Algorithm::kHalvingDoubling, 1 << 20));
  EXPECT_FALSE(worthKeeping(Algorithm::kOrdered, 64 << 20));
}

// One entry per algorithm and size class (a power of two, rounded): the
// mean size of its calls and the shortest time.
TEST(KeptCalls, OneEntryPerAlgorithmAndSizeClass) {
  CallTimes times;
  times.note(Algorithm::kRing, 16 << 20, 100);
  times.note(Algorithm::kRing, 15 << 20, 200);  // rounds to 16 MiB too
  times.note(Algorithm::kHalvingDoubling, 16 << 20, 50);
  times.note(Algorithm::kRing, 64 << 20, 400);
  const std::vector<KeptCall> calls = times.calls();
  ASSERT_EQ(calls.size(), 3u);
  const KeptCall& ring16 = calls[0];
  EXPECT_EQ(ring16.algorithm, static_cast<int32_t>(Algorithm::kRing));
  EXPECT_DOUBLE_EQ(ring16.bytes, 15.5 * MiB);
  EXPECT_DOUBLE_EQ(ring16.us, 100);
  EXPECT_DOUBLE_EQ(ring16.calls, 2);
  EXPECT_DOUBLE_EQ(calls[1].us, 50);
  EXPECT_DOUBLE_EQ(calls[2].us, 400);
}

// A call that waited for a late rank (one saving a checkpoint, or still
// in its backward pass) times the lateness, not the algorithm: a class's
// time is the shortest of its recent calls, so such calls do not price the
// algorithm at hundreds of times its cost.
TEST(KeptCalls, ACallThatWaitedOnALateRankDoesNotSetThePrice) {
  CallTimes times;
  times.note(Algorithm::kRing, 16 << 20, 600000);
  for (int i = 0; i < 9; ++i) times.note(Algorithm::kRing, 16 << 20, 108 - i);
  times.note(Algorithm::kRing, 16 << 20, 300000);
  ASSERT_EQ(times.calls().size(), 1u);
  EXPECT_DOUBLE_EQ(times.calls()[0].us, (100 + 101 + 102 + 103 + 104 + 105 + 106 + 107) / 8.0);
  EXPECT_DOUBLE_EQ(times.calls()[0].calls, 11);
  // Only recent calls count: a network that changed within the run shows.
  CallTimes changed;
  for (int i = 0; i < 40; ++i) changed.note(Algorithm::kRing, 16 << 20, i < 20 ? 100 : 200);
  EXPECT_DOUBLE_EQ(changed.calls()[0].us, 200);
}

// Nor does one call that came last, when the others had done its work
// (4 x 1 on veth: rank 0 kept one 64 KiB call of 37 us as the price of
// calls of 190, and the model chose it for every launch after).
TEST(KeptCalls, ACallThisRankCameLastToDoesNotSetThePrice) {
  CallTimes times;
  for (int i = 0; i < 14; ++i) times.note(Algorithm::kRecursiveDoubling, 64 << 10, i == 5 ? 37 : 190);
  ASSERT_EQ(times.calls().size(), 1u);
  EXPECT_DOUBLE_EQ(times.calls()[0].us, (37 + 9 * 190) / 10.0);
}

// Earlier runs weigh 16 calls at most: a network that changed shows after
// a run or two.
TEST(KeptCalls, EarlierRunsWeighSixteenCallsAtMost) {
  const std::vector<KeptCall> kept = {call(Algorithm::kRing, 64 * MiB, 100, 500),
                                      call(Algorithm::kRing, 16 * MiB, 30, 3)};
  const std::vector<KeptCall> fresh = {call(Algorithm::kRing, 60 * MiB, 200, 4),
                                       call(Algorithm::kHalvingDoubling, 64 * MiB, 70, 2)};
  const std::vector<KeptCall> merged = mergeKeptCalls(kept, fresh);
  ASSERT_EQ(merged.size(), 3u);
  auto find = [&](Algorithm a, double bytes) {
    for (const KeptCall& c : merged)
      if (c.algorithm == static_cast<int32_t>(a) && std::abs(c.bytes - bytes) < 8 * MiB) return c;
    ADD_FAILURE() << "no entry of " << bytes << " bytes";
    return KeptCall{};
  };
  const KeptCall ring64 = find(Algorithm::kRing, 64 * MiB);
  EXPECT_DOUBLE_EQ(ring64.us, (100 * 16 + 200 * 4) / 20.0);
  EXPECT_DOUBLE_EQ(ring64.bytes, (64 * 16 + 60 * 4) * MiB / 20.0);
  EXPECT_DOUBLE_EQ(ring64.calls, 20);
  EXPECT_DOUBLE_EQ(find(Algorithm::kRing, 16 * MiB).us, 30);
  EXPECT_DOUBLE_EQ(find(Algorithm::kHalvingDoubling, 64 * MiB).us, 70);
  // Too many: the largest sizes stay.
  std::vector<KeptCall> many;
  for (int i = 0; i < kMaxKeptCalls + 5; ++i) many.push_back(call(Algorithm::kRing, std::ldexp(4096, i), 1, 1));
  const std::vector<KeptCall> kept2 = mergeKeptCalls({}, many);
  ASSERT_EQ(kept2.size(), static_cast<size_t>(kMaxKeptCalls));
  for (const KeptCall& c : kept2) EXPECT_GE(c.bytes, std::ldexp(4096, 5));
}

// A run that ran more sizes than are kept keeps its largest: a sweep goes
// from small to large, and the first sizes once took every place.
TEST(KeptCalls, ARunOfManySizesKeepsItsLargest) {
  CallTimes times;
  for (int i = 0; i < kMaxKeptCalls + 5; ++i) times.note(Algorithm::kRing, size_t{8} << i, i + 1);
  times.note(Algorithm::kRing, 8, 1);  // smaller than every kept size: not taken
  const std::vector<KeptCall> calls = times.calls();
  ASSERT_EQ(calls.size(), static_cast<size_t>(kMaxKeptCalls));
  for (const KeptCall& c : calls) {
    EXPECT_GE(c.bytes, 8 << 5);
    EXPECT_DOUBLE_EQ(c.us, std::log2(c.bytes / 8) + 1);
  }
}

// Sets algorithm `a`'s calibration as init would have measured it: at
// `bytes`, `ratio` times the model alone.
void calibrate(TuneContext* t, Algorithm a, std::vector<double> bytes, std::vector<double> ratio) {
  TuneContext::Calibration& k = t->allReduce[static_cast<int>(a)];
  TuneContext model = restrictedTo(*t, a);
  model.allReduce[static_cast<int>(a)] = {};
  k.points = static_cast<int>(bytes.size());
  for (size_t p = 0; p < bytes.size(); ++p) {
    k.bytes[p] = bytes[p];
    k.ratio[p] = ratio[p];
    k.us[p] = ratio[p] * tune(model, Collective::kAllReduce, static_cast<size_t>(bytes[p])).predictedUs;
    k.calls[p] = calibrationCalls(bytes[p]);
  }
}

// 4 namespace nodes of one rank sharing 2 cores, as init measured them.
TuneContext fourNodesOfOneRank(double netUs, double netGBs) {
  NodeLayout l = NodeLayout::uniform(4, 1, false, 1, 4, 2);
  TuneContext t = TuneContext::fromLayout(l, l.ring(0, RingOrder::kTopo), 2, false, 128 << 10);
  MeasuredLinks links;
  links.net = {true, netUs, netGBs, 1};
  applyMeasuredLinks(links, &t);
  return t;
}

double priceOf(const TuneContext& t, Algorithm a, size_t bytes) {
  return tune(restrictedTo(t, a), Collective::kAllReduce, bytes).predictedUs;
}

// Shaped to 4 Gbit/s, as init measured them in one launch of
// bench/results/kept_call_times.md: the calibration priced rings a little
// below halving-doubling at 64 MiB, where they took 1.1-1.6x as long. A
// ring's kept 64 MiB time hands the call to halving-doubling, and each
// algorithm is then priced at a kept size as it ran there.
TEST(KeptCalls, ARingKeptSlowHandsLargeCallsOn) {
  TuneContext t = fourNodesOfOneRank(22.1, 0.33);
  calibrate(&t, Algorithm::kRing, {8, 256, 128 << 10, 4 << 20}, {0.45, 1.12, 1.33, 0.85});
  calibrate(&t, Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 1 << 20}, {0.88, 1.44, 1.24, 0.65});
  t.filter = AlgoFilter::parse("ring,hd").value();
  const Collective ar = Collective::kAllReduce;
  const size_t big = 64 << 20;
  ASSERT_EQ(tune(t, ar, big).algorithm, Algorithm::kRing) << "the launch's choice";
  const double ringThen = tune(t, ar, big).predictedUs;

  TuneContext later = t;
  addKeptCalls({call(Algorithm::kRing, big, 1.3 * ringThen, 2), call(Algorithm::kRing, 16 << 20, 1e5, 2),
                call(Algorithm::kRing, 2 << 20, 1e5, 2)},  // between the measured 128 KiB and 4 MiB
               &later);
  const TuneContext::Calibration& ring = later.allReduce[static_cast<int>(Algorithm::kRing)];
  ASSERT_EQ(ring.points, 7);
  EXPECT_DOUBLE_EQ(ring.bytes[3], 2 << 20);
  EXPECT_DOUBLE_EQ(ring.bytes[4], 4 << 20);
  EXPECT_FALSE(ring.kept[4]);
  EXPECT_DOUBLE_EQ(ring.bytes[5], 16 << 20);
  EXPECT_DOUBLE_EQ(ring.bytes[6], big);
  EXPECT_TRUE(ring.kept[3] && ring.kept[5] && ring.kept[6]);
  EXPECT_EQ(tune(later, ar, big).algorithm, Algorithm::kHalvingDoubling);
  EXPECT_NEAR(priceOf(later, Algorithm::kRing, big), 1.3 * ringThen, 1e-6 * ringThen);
  EXPECT_NEAR(priceOf(later, Algorithm::kRing, 2 << 20), 1e5, 1e-3);
  // Kept once: a second call adds nothing.
  addKeptCalls({call(Algorithm::kRing, 32 << 20, 1, 1)}, &later);
  EXPECT_EQ(later.allReduce[static_cast<int>(Algorithm::kRing)].points, 7);

  // Halving-doubling kept as running slower still: back to rings.
  TuneContext both = t;
  addKeptCalls({call(Algorithm::kRing, big, 1.3 * ringThen, 2),
                call(Algorithm::kHalvingDoubling, big, 1.5 * ringThen, 2)},
               &both);
  EXPECT_EQ(tune(both, ar, big).algorithm, Algorithm::kRing);
  EXPECT_NEAR(tune(both, ar, big).predictedUs, 1.3 * ringThen, 1e-6 * ringThen);

  // Every size it ran at past its calibration prices it (on these nodes
  // halving-doubling ran at 2-64 MiB; with the largest four kept, 4 MiB
  // was priced from 1 and 8 MiB and chosen, at 1.2x a ring's time).
  TuneContext six = t;
  std::vector<KeptCall> hd;
  for (size_t b = 2 << 20; b <= big; b *= 2)
    hd.push_back(call(Algorithm::kHalvingDoubling, b, 1.3 * priceOf(t, Algorithm::kRing, b), 2));
  addKeptCalls(hd, &six);
  EXPECT_EQ(six.allReduce[static_cast<int>(Algorithm::kHalvingDoubling)].points, 4 + 6);
  for (size_t b = 2 << 20; b <= big; b *= 2) EXPECT_EQ(tune(six, ar, b).algorithm, Algorithm::kRing) << b;
}

// 4 x 1 on veth, one launch: init timed a ring's 1 MiB at 1.03 ms, as its
// calls ran, and halving-doubling's at 0.96 ms, but its calls ran 1.2-1.8
// ms (init times 10 calls just after ranks met; halving-doubling's calls
// slow as ranks drift apart, a ring's do not). Earlier runs' calls at a size
// init measured weigh against init's by count (16 at most), and the price
// moves to them.
TEST(KeptCalls, ACalibratedSizeIsPricedWithItsKeptCalls) {
  TuneContext t = fourNodesOfOneRank(7.5, 1.83);
  t.filter = AlgoFilter::parse("ring,hd").value();
  auto ratioFor = [&](Algorithm a, size_t bytes, double us) { return us / priceOf(t, a, bytes); };
  calibrate(&t, Algorithm::kRing, {8, 256, 1 << 20, 4 << 20},
            {0.38, 0.83, ratioFor(Algorithm::kRing, 1 << 20, 1029), 1.2});
  calibrate(&t, Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 1 << 20},
            {0.67, 1.26, 0.88, ratioFor(Algorithm::kHalvingDoubling, 1 << 20, 957)});
  const Collective ar = Collective::kAllReduce;
  ASSERT_EQ(tune(t, ar, 1 << 20).algorithm, Algorithm::kHalvingDoubling) << "the launch's choice";

  TuneContext later = t;
  addKeptCalls({call(Algorithm::kHalvingDoubling, 1 << 20, 1450, 46), call(Algorithm::kRing, 4 << 20, 4150, 16)},
               &later);
  const TuneContext::Calibration& hd = later.allReduce[static_cast<int>(Algorithm::kHalvingDoubling)];
  const TuneContext::Calibration& ring = later.allReduce[static_cast<int>(Algorithm::kRing)];
  ASSERT_EQ(hd.points, 4);  // the same sizes: no point added
  ASSERT_EQ(ring.points, 4);
  EXPECT_TRUE(hd.kept[3] && ring.kept[3]);
  EXPECT_FALSE(hd.kept[2] || ring.kept[2]);
  // 46 calls kept, weighed as 16: the kept time is the typical of recent calls.
  EXPECT_DOUBLE_EQ(hd.calls[3], 8 + 16);
  EXPECT_NEAR(priceOf(later, Algorithm::kHalvingDoubling, 1 << 20), (8 * 957 + 16 * 1450) / 24.0, 1e-6);
  const double ringAt4M = priceOf(t, Algorithm::kRing, 4 << 20);
  EXPECT_NEAR(priceOf(later, Algorithm::kRing, 4 << 20), (4 * ringAt4M + 16 * 4150) / 20, 1e-6 * ringAt4M);
  EXPECT_EQ(tune(later, ar, 1 << 20).algorithm, Algorithm::kRing);
  // What init measured alone keeps its price.
  EXPECT_DOUBLE_EQ(priceOf(later, Algorithm::kRing, 1 << 20), 1029);
  EXPECT_DOUBLE_EQ(priceOf(later, Algorithm::kHalvingDoubling, 64 << 10), priceOf(t, Algorithm::kHalvingDoubling, 64 << 10));
}

// Kept times are typical ones, as init's are: set against the model
// without the slow draws, so a kept size's price is its kept time and the
// prediction carries the slow draws once.
TEST(KeptCalls, AKeptTimeIsTypicalBesideTheSlowDraws) {
  TuneContext t = fourNodesOfOneRank(7.5, 1.83);
  calibrate(&t, Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 1 << 20}, {0.7, 1.2, 0.9, 1.0});
  t.slowDrawFactor = 1.3;
  addKeptCalls({call(Algorithm::kHalvingDoubling, 4 << 20, 5000, 16)}, &t);
  EXPECT_NEAR(priceOf(t, Algorithm::kHalvingDoubling, 4 << 20), 5000, 1e-6);
  TuneContext hdOnly = t;
  hdOnly.filter = AlgoFilter::parse("hd").value();
  EXPECT_NEAR(tune(hdOnly, Collective::kAllReduce, 4 << 20).predictedUs, 1.3 * 5000, 1e-6);
  // An algorithm's own slow draws, measured at init, stay with it.
  TuneContext own = fourNodesOfOneRank(7.5, 1.83);
  calibrate(&own, Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 1 << 20}, {0.7, 1.2, 0.9, 1.0});
  own.slowDrawFactor = 1.3;
  own.allReduce[static_cast<int>(Algorithm::kHalvingDoubling)].slowDraw = 1.05;
  addKeptCalls({call(Algorithm::kHalvingDoubling, 4 << 20, 5000, 16)}, &own);
  EXPECT_DOUBLE_EQ(own.allReduce[static_cast<int>(Algorithm::kHalvingDoubling)].slowDraw, 1.05);
  own.filter = AlgoFilter::parse("hd").value();
  EXPECT_NEAR(tune(own, Collective::kAllReduce, 4 << 20).predictedUs, 1.05 * 5000, 1e-6);
}

// A price carried past an algorithm's last measured size wins a near tie
// against one measured at the call's size only by a margin: a ring kept at
// 16 MiB 2% dearer than halving-doubling's price from its 1 MiB keeps the
// call; 10% dearer, it hands it on. Either way the prediction is the price.
TEST(KeptCalls, AMeasuredPriceKeepsANearTieAgainstACarriedOne) {
  TuneContext t = fourNodesOfOneRank(9.2, 0.49);
  calibrate(&t, Algorithm::kRing, {8, 256, 1 << 20, 4 << 20}, {1, 1, 1, 1});
  calibrate(&t, Algorithm::kHalvingDoubling, {8, 256, 64 << 10, 1 << 20}, {1, 1, 1, 1});
  t.filter = AlgoFilter::parse("ring,hd").value();
  const size_t bytes = 16 << 20;
  const double hd = priceOf(t, Algorithm::kHalvingDoubling, bytes);
  for (double over : {1.02, 1.10}) {
    TuneContext k = t;
    addKeptCalls({call(Algorithm::kRing, bytes, hd * over, 16)}, &k);
    ASSERT_NEAR(priceOf(k, Algorithm::kRing, bytes), hd * over, 1e-6 * hd);
    ASSERT_NEAR(priceOf(k, Algorithm::kHalvingDoubling, bytes), hd, 1e-6 * hd);
    const TuneChoice c = tune(k, Collective::kAllReduce, bytes);
    EXPECT_EQ(c.algorithm, over < 1.05 ? Algorithm::kRing : Algorithm::kHalvingDoubling) << over;
    EXPECT_NEAR(c.predictedUs, over < 1.05 ? hd * over : hd, 1e-6 * hd) << over;
  }
}

const char* const kShape = "v1; 4 rank(s) on 4 node(s): [0] [1] [2] [3]; 4 rank(s) on 2 core(s)";

TEST(KeptCalls, FileRoundTripsAndNamesItsShape) {
  const std::vector<KeptCall> calls = {call(Algorithm::kRing, 64 * MiB, 3e5, 4),
                                       call(Algorithm::kHalvingDoubling, 16 * MiB, 7e4, 2.5)};
  const std::string text = keptCallsToJson(calls, kShape);
  const std::vector<KeptCall> back = keptCallsFromJson(text, kShape);
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].algorithm, calls[i].algorithm);
    EXPECT_DOUBLE_EQ(back[i].bytes, calls[i].bytes);
    EXPECT_DOUBLE_EQ(back[i].us, calls[i].us);
    EXPECT_DOUBLE_EQ(back[i].calls, calls[i].calls);
  }
  EXPECT_TRUE(keptCallsFromJson(text, "another shape").empty());
  EXPECT_NE(keptCallsPath("/d", kShape), keptCallsPath("/d", "another shape"));
}

// A file another program wrote, or a stranger: nothing of it is used.
TEST(KeptCalls, AStrangersFileGivesNothing) {
  const std::string shape = std::string("\"shape\": \"") + kShape + "\"";
  auto entry = [](const std::string& algorithm, const std::string& bytes, const std::string& us,
                  const std::string& calls) {
    return "{\"algorithm\": \"" + algorithm + "\", \"bytes\": " + bytes + ", \"us\": " + us + ", \"calls\": " + calls + "}";
  };
  const std::string good = entry("ring", "67108864", "300000", "4");
  EXPECT_EQ(keptCallsFromJson("{" + shape + ", \"allreduce\": [" + good + "]}", kShape).size(), 1u);
  for (const std::string& bad : {entry("ring", "67108864", "-5", "4"), entry("ring", "0", "10", "4"),
                                 entry("ring", "67108864", "1e300", "4"), entry("ring", "67108864", "10", "0"),
                                 entry("ordered", "67108864", "10", "1"), entry("nccl", "67108864", "10", "1"),
                                 entry("ring", "\"64M\"", "10", "1"), std::string("[]"), std::string("7")})
    EXPECT_TRUE(keptCallsFromJson("{" + shape + ", \"allreduce\": [" + good + ", " + bad + "]}", kShape).empty())
        << bad;
  std::string many;
  for (int i = 0; i <= kMaxKeptCalls; ++i) many += (i ? ", " : "") + good;
  EXPECT_TRUE(keptCallsFromJson("{" + shape + ", \"allreduce\": [" + many + "]}", kShape).empty());
  for (const std::string& text : {std::string(""), std::string("{"), std::string("\x01\xff garbage"),
                                  std::string("[1, 2]"), "{" + shape + ", \"allreduce\": 5}"})
    EXPECT_TRUE(keptCallsFromJson(text, kShape).empty()) << text;
}

// Every part of the shape names it, however long the layout (a fixed buffer
// once cut a 64-rank layout's shape short of its settings).
TEST(KeptCalls, TheShapeKeepsEveryPartOfALongLayout) {
  std::string layout = "64 rank(s) on 8 node(s):";
  for (int n = 0; n < 8; ++n) {
    layout += " [";
    for (int i = 0; i < 8; ++i) layout += (i ? " " : "") + std::to_string(n * 8 + i);
    layout += "]";
  }
  const std::string shape = keptCallsShape(layout, 8, 16, "ib", 200, 0x1234);
  EXPECT_NE(shape.find(layout), std::string::npos) << shape;
  EXPECT_NE(shape.find("settings 0000000000001234"), std::string::npos) << shape;
  EXPECT_NE(shape, keptCallsShape(layout, 8, 16, "ib", 200, 0x1235));
  EXPECT_NE(shape, keptCallsShape(layout, 8, 16, "socket", 200, 0x1234));
}

// Written, then merged on the next write; a file of another user's is not read.
TEST(KeptCalls, WritesMergeIntoTheFile) {
  tutti_test::TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string path = keptCallsPath(dir.path, kShape);
  EXPECT_TRUE(readKeptCalls(path, kShape).empty());
  ASSERT_TRUE(writeKeptCalls(path, kShape, {call(Algorithm::kRing, 64 * MiB, 100, 2)}).ok());
  ASSERT_TRUE(writeKeptCalls(path, kShape, {call(Algorithm::kRing, 64 * MiB, 400, 1)}).ok());
  std::vector<KeptCall> read = readKeptCalls(path, kShape);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_DOUBLE_EQ(read[0].us, 200);
  EXPECT_DOUBLE_EQ(read[0].calls, 3);
  EXPECT_FALSE(writeKeptCalls(dir.path + "/no/such/dir/f.json", kShape, {call(Algorithm::kRing, 64 * MiB, 1, 1)}).ok());
  if (getuid() == 0) {  // root can give it away
    ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
    EXPECT_TRUE(readKeptCalls(path, kShape).empty());
  }
}

}  // namespace
}  // namespace tutti
