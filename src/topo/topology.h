// What hwloc sees of this machine. The full topology graph (PCI, NICs, GPUs,
// links, dump/load) comes with the topology issue; this is the summary that
// tutti-info and init logging print.
#pragma once

#include <string>
#include <vector>

namespace tutti {

struct TopologySummary {
  int packages = 0;
  int numaNodes = 0;
  int cores = 0;
  int hardwareThreads = 0;
  std::vector<std::string> osDevices;  // network and other OS devices hwloc lists
  std::string error;                   // non-empty when detection failed
};

TopologySummary detectTopology();

}  // namespace tutti
