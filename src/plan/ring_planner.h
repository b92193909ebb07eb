// Ring algorithms as Steps. Ranks sit on a ring in order; each channel runs
// the same algorithm over its own slice of every block, so channels proceed
// independently over their own connections.
#pragma once

#include <cstddef>

#include "src/plan/plan.h"

namespace tutti {

struct RingRequest {
  Collective collective = Collective::kAllReduce;
  int nranks = 1;
  int rank = 0;
  int root = 0;         // broadcast, reduce
  size_t count = 0;     // allreduce/broadcast/reduce: elements; allgather: per-rank send
                        // count; reducescatter: per-rank receive count
  int nchannels = 1;
  int peer = -1;        // send, recv
  size_t elemSize = 4;  // bytes per element, for cache-line aligned blocks
};

// Fills `plan` (reusing its storage, so steady-state calls do not allocate).
void buildRingPlan(const RingRequest& request, Plan* plan);

// Start of block j of n over count elements: balanced, and on 64-byte
// boundaries where the count allows (whole cache lines per rank).
size_t blockStart(size_t count, int n, int j, size_t elemSize);

}  // namespace tutti
