// Which NICs a GPU should send through: the ones fewest PCI hops away, as
// NCCL pairs each GPU with the NIC under its own PCI switch. NVLink edges do
// not count: a GPU does not forward another GPU's network traffic.
#pragma once

#include <string>
#include <vector>

#include "src/topo/topology.h"

namespace tutti {

// The graph's NIC names, nearest to the GPU with this PCI bus id first (ties
// keep the graph's order). Empty when the GPU is not in the graph.
std::vector<std::string> nicsNearestFirst(const TopoGraph& graph, const std::string& gpuBusId);

}  // namespace tutti
