// The cost model's all-reduce times, measured at init on a communicator of
// several nodes (TuneContext::allReduce): each algorithm the model may
// choose here, at a few sizes, every rank running it at once.
#pragma once

#include "src/common/status.h"
#include "src/plan/tuner.h"

namespace tutti {

class Communicator;

// Collective: times all-reduces of each algorithm the model may choose here
// (8 bytes, a cache line a rank, and two sizes of the algorithm's own)
// against the model with `tuning`'s measured links, the same figures on
// every rank. Runs every rank's planner restricted to one algorithm at a
// time, then puts `tuning` back with the calibration in.
Status calibrateAllReduce(Communicator& comm, TuneContext* tuning);

}  // namespace tutti
