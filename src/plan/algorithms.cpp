#include "src/plan/algorithms.h"

#include <cstring>

#include "src/plan/costs.h"
#include "src/plan/plan_internal.h"

namespace tutti {

namespace {

constexpr uint8_t bit(Collective c) { return static_cast<uint8_t>(1u << static_cast<int>(c)); }
constexpr uint8_t kAllReduceOnly = bit(Collective::kAllReduce);
constexpr uint8_t kEveryCollective = bit(Collective::kAllReduce) | bit(Collective::kAllGather) |
                                     bit(Collective::kBroadcast) | bit(Collective::kReduce) |
                                     bit(Collective::kReduceScatter);
constexpr uint8_t kTreeCollectives = bit(Collective::kAllReduce) | bit(Collective::kBroadcast) | bit(Collective::kReduce);
constexpr uint8_t kReductions = bit(Collective::kAllReduce) | bit(Collective::kReduce) | bit(Collective::kReduceScatter);

// In Algorithm's order, the cost model's kNumAlgorithms first. Columns: id,
// name, collectives, one-shot channel, needs a layout, cost, planner,
// scratch, calibration sizes (a ring's middle one where it meets
// halving-doubling and trees: timed at 128 KiB, 4 x 1 veth priced a ring's
// 1 MiB at 1.3-1.9 ms where it took 1.0-1.4, and chose halving-doubling,
// which took 1.5).
constexpr AlgorithmEntry kTable[] = {
    {Algorithm::kRing, "ring", kEveryCollective, false, false, ringCostUs, planRingChannel, nullptr,
     {1 << 20, 4 << 20}},
    {Algorithm::kTree, "tree", kTreeCollectives, false, true, treeCostUs, planTreeChannel, treeScratch,
     {64 << 10, 1 << 20}},
    {Algorithm::kOneShot, "oneshot", kEveryCollective, true, false, oneShotCostUs, planOneShotChannel, nullptr,
     {4 << 10, 16 << 10}},
    {Algorithm::kRecursiveDoubling, "rd", kAllReduceOnly, true, false, recursiveDoublingCostUs,
     planRecursiveDoublingChannel, nullptr, {4 << 10, 32 << 10}},
    {Algorithm::kTwoLevel, "twolevel", kAllReduceOnly, true, false, twoLevelCostUs, planTwoLevelChannel, nullptr,
     {64 << 10, 1 << 20}},
    {Algorithm::kHalvingDoubling, "hd", kAllReduceOnly, true, false, halvingDoublingCostUs, planTwoLevelChannel,
     nullptr, {64 << 10, 1 << 20}},
    {Algorithm::kOrdered, "ordered", kReductions, false, false, nullptr, planOrderedChannel, orderedScratch, {0, 0}},
};
constexpr int kTableSize = sizeof(kTable) / sizeof(kTable[0]);

constexpr bool inOrder() {
  for (int i = 0; i < kTableSize; ++i)
    if (static_cast<int>(kTable[i].id) != i) return false;
  return kTableSize == kNumAlgorithms + 1;
}
static_assert(inOrder(), "kTable lists every Algorithm, in order");

}  // namespace

const AlgorithmEntry& algorithmEntry(Algorithm a) { return kTable[static_cast<int>(a)]; }

const AlgorithmEntry* algorithmNamed(const char* name) {
  for (const AlgorithmEntry& e : kTable)
    if (std::strcmp(e.name, name) == 0) return &e;
  return nullptr;
}

const char* algorithmName(Algorithm a) {
  const int i = static_cast<int>(a);
  return i >= 0 && i < kTableSize ? kTable[i].name : "?";
}

}  // namespace tutti
