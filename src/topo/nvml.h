// NVML, loaded at run time when the driver provides it: the GPUs' PCI bus ids
// and their NVLink peers. No NVML (as on a machine without a driver) simply
// means no GPUs in the topology.
#pragma once

#include <string>
#include <vector>

namespace tutti {

struct NvmlGpu {
  std::string name;
  std::string busId;                     // lower case, "0000:3b:00.0"
  std::vector<std::string> nvlinkPeers;  // bus id at the far end of each active link
};

// Empty with `why` set when NVML is not there or fails.
std::vector<NvmlGpu> queryNvmlGpus(std::string* why);

// "00000000:3B:00.0" -> "0000:3b:00.0": the form sysfs and hwloc use.
std::string normalizeBusId(const std::string& busId);

}  // namespace tutti
