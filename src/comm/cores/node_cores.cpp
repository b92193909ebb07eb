#include "src/comm/cores/node_cores.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tutti {

std::vector<int> nodeCoreShare(const std::vector<int>& available, const std::vector<int>& nodes, int node,
                               int ranks) {
  const int m = static_cast<int>(nodes.size()), c = static_cast<int>(available.size());
  const auto at = std::find(nodes.begin(), nodes.end(), node);
  if (m < 2 || m > c || ranks <= c || at == nodes.end()) return {};
  const int k = static_cast<int>(at - nodes.begin());
  return std::vector<int>(available.begin() + k * c / m, available.begin() + (k + 1) * c / m);
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

std::string describeCores(const std::vector<int>& cores) {
  std::string out;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cores[i]);
    if (j > i) out += "-" + std::to_string(cores[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace tutti
