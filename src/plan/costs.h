// The cost model's price of each algorithm (the AlgorithmEntry::costUs of
// src/plan/algorithms.h): microseconds for one call moving `bytes` over
// `nchannels` channels in chunks of `chunkBytes`, from the communicator's
// link costs and layout (TuneContext). 1e30 where the algorithm does not
// fit. Several ranks at least: tuner.cpp prices one rank alone.
#pragma once

#include <cstddef>

#include "src/plan/tuner.h"

namespace tutti {

double ringCostUs(const TuneContext& t, Collective c, size_t bytes, int nchannels, size_t chunkBytes);
double treeCostUs(const TuneContext& t, Collective c, size_t bytes, int nchannels, size_t chunkBytes);
double oneShotCostUs(const TuneContext& t, Collective c, size_t bytes, int nchannels, size_t chunkBytes);
double recursiveDoublingCostUs(const TuneContext& t, Collective c, size_t bytes, int nchannels, size_t chunkBytes);
double twoLevelCostUs(const TuneContext& t, Collective c, size_t bytes, int nchannels, size_t chunkBytes);
double halvingDoublingCostUs(const TuneContext& t, Collective c, size_t bytes, int nchannels, size_t chunkBytes);

}  // namespace tutti
