// Shared by the algorithms' planners.
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

// Each algorithm's planner (its AlgorithmEntry::planChannel): appends
// channel `channel`'s programs to `plan`; `used` counts the plan's programs
// filled so far, whose storage is reused. Trees may need two programs on one
// channel (reduce up, broadcast down).
void planRingChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used);
void planTreeChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used);
// Deterministic reductions (ordered_plan.cpp).
void planOrderedChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used);
// Small calls in one hop (one_shot_plan.cpp).
void planOneShotChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used);
// Recursive doubling all-reduce (recursive_doubling_plan.cpp): one program
// on the one-shot channel.
void planRecursiveDoublingChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used);
// Two-level all-reduces, kTwoLevel and kHalvingDoubling (two_level_plan.cpp):
// one program on the one-shot channel; recursive doubling's where the layout
// does not fit them.
void planTwoLevelChannel(const PlanRequest& r, int channel, Plan* plan, size_t* used);
// ChannelProgram::phaseLinks of a one-shot program (one_shot_slots.cpp):
// - setPhaseLinksByPeers: each phase the kind of its connections, for a program
//   whose every phase talks to one kind of link only (inside its node, or
//   across), as the same exchange's phase does at the other end;
// - setPhaseLinksNarrowest: narrowestOneShotLink, one chunk size for the whole
//   call, for any other program.
void setPhaseLinksByPeers(const PlanRequest& r, ChannelProgram* program);
void setPhaseLinksNarrowest(const PlanRequest& r, ChannelProgram* program);
// Scratch of the algorithms that need it (AlgorithmEntry::scratch).
void treeScratch(const PlanRequest& r, Plan* plan);
void orderedScratch(const PlanRequest& r, Plan* plan);
// The plan's next program on `channel`, its storage reused.
ChannelProgram& newProgram(Plan* plan, int channel, size_t* used);

}  // namespace tutti
