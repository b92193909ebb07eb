// Which NICs a GPU should send through: the ones fewest PCI hops away, as
// NCCL pairs each GPU with the NIC under its own PCI switch. NVLink edges do
// not count: a GPU does not forward another GPU's network traffic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/topo/topology.h"

namespace tutti {

// The graph's NIC names, nearest to the GPU with this PCI bus id first (ties
// keep the graph's order). Empty when the GPU is not in the graph.
std::vector<std::string> nicsNearestFirst(const TopoGraph& graph, const std::string& gpuBusId);

// How far apart two PCI devices are, in NCCL's words: under one PCI switch
// (PIX), under several switches without crossing a CPU (PXB), through one
// CPU's host bridge (PHB), or across the link between CPU packages (SYS).
// LOC is the same device. Nearer is smaller.
enum class PciPath : int { kLoc = 0, kPix = 1, kPxb = 2, kPhb = 3, kSys = 4 };
const char* pciPathName(PciPath p);

// The path between the GPU and the device (a NIC) with these PCI bus ids;
// nothing when either is not in the graph or they are not connected.
std::optional<PciPath> pciPathBetween(const TopoGraph& graph, const std::string& gpuBusId,
                                      const std::string& deviceBusId);

}  // namespace tutti
