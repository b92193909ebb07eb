#include "src/comm/cores/node_cores.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/common/number_ranges.h"

namespace tutti {

std::vector<int> nodeCoreShare(const std::vector<int>& available, const std::vector<int>& nodes, int node,
                               int ranks) {
  const int m = static_cast<int>(nodes.size()), c = static_cast<int>(available.size());
  const auto at = std::find(nodes.begin(), nodes.end(), node);
  if (m < 2 || c == 0 || ranks <= c || at == nodes.end()) return {};
  const int k = static_cast<int>(at - nodes.begin());
  if (m <= c) return std::vector<int>(available.begin() + k * c / m, available.begin() + (k + 1) * c / m);
  if (m % c != 0) return {};  // some cores would carry more nodes than others
  return {available[k / (m / c)]};
}

std::vector<int> threadCores() {
  cpu_set_t set;
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cores.push_back(i);
  return cores;
}

Status bindThreadTo(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores)
    if (core >= 0 && core < CPU_SETSIZE) CPU_SET(core, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0)
    return SystemError("binding to cores " + describeCores(cores) + ": " + std::strerror(errno));
  return Status::Ok();
}

std::string describeCores(const std::vector<int>& cores) { return numberRanges(cores, ","); }

}  // namespace tutti
