// Network nodes that share one kernel and its cores (containers or network
// namespaces on one machine, as the multi-node benchmarks here run) take a
// share of those cores each, as containers given cpusets would: a node's
// ranks then take turns on their own cores. Left to the scheduler, 2
// namespace nodes x 2 ranks on 2 cores had each node's ranks on one core
// in some launches and on two in others, and moved them within a launch:
// small all-reduces took 17-22 us the first way and 29.5-33 the second,
// and init's calibration priced the placement of its moment
// (bench/results/scheduler_placement.md).
#pragma once

#include <string>
#include <vector>

#include "src/common/status.h"

namespace tutti {

// The cores network node `node` takes of `available` (core ids, in order)
// where `ranks` ranks of the nodes `nodes` (node indices, `node` among them)
// share them: an even cut, in node order; with more nodes than cores, as
// many nodes a core (4 x 1 on 2 cores: nodes 0-1 on the first; small calls
// across shaped links then took 55.8-59.4 us in every launch, 57-90 placed
// by the scheduler). Empty where they stay shared: one node alone, no more
// ranks than cores, or nodes that do not divide evenly over the cores.
std::vector<int> nodeCoreShare(const std::vector<int>& available, const std::vector<int>& nodes, int node,
                               int ranks);

// The cores this thread may run on, in order.
std::vector<int> threadCores();

// Binds the calling thread (and the threads it starts from now on) to `cores`.
Status bindThreadTo(const std::vector<int>& cores);

// "0-3,6": a list of cores as taskset prints it.
std::string describeCores(const std::vector<int>& cores);

}  // namespace tutti
