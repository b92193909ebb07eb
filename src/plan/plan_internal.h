// Shared by the ring and tree planners.
#pragma once

#include <vector>

#include "src/plan/planner.h"

namespace tutti {

struct Slice {
  size_t begin;
  size_t count;
};

// Channel c's part of [lo, lo + len) when split over `nchannels`.
inline Slice channelSlice(size_t lo, size_t len, int nchannels, int c, size_t elemSize) {
  size_t b = blockStart(len, nchannels, c, elemSize), e = blockStart(len, nchannels, c + 1, elemSize);
  return Slice{lo + b, e - b};
}

void planRingChannel(const PlanRequest& r, int channel, std::vector<Step>* steps);
// Trees may need two programs on one channel (reduce up, broadcast down);
// `used` counts the plan's programs filled so far (their storage is reused).
void planTreeChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used);
// Deterministic reductions: same contract as planTreeChannel.
void planOrderedChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used);
// Small calls in one hop (one_shot_plan.cpp): same contract.
void planOneShotChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used);
// Recursive doubling all-reduce (recursive_doubling_plan.cpp): one program.
void planRecursiveDoublingChannel(const PlanRequest& r, Plan* plan, size_t* used);
// Two-level all-reduces, kTwoLevel and kHalvingDoubling (two_level_plan.cpp):
// one program; recursive doubling's where the layout does not fit them.
void planTwoLevelChannel(const PlanRequest& r, Plan* plan, size_t* used);
// The plan's next program on `channel`, its storage reused.
ChannelProgram& newProgram(Plan* plan, int channel, size_t* used);

}  // namespace tutti
