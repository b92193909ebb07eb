#include "src/topo/nic_affinity.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>

namespace tutti {

std::vector<std::string> nicsNearestFirst(const TopoGraph& graph, const std::string& gpuBusId) {
  std::string bus = gpuBusId;
  std::transform(bus.begin(), bus.end(), bus.begin(), [](unsigned char c) { return std::tolower(c); });
  const TopoNode* gpu = nullptr;
  for (const TopoNode* g : graph.ofKind(TopoKind::kGpu))
    if (g->busId == bus) gpu = g;
  if (!gpu) return {};
  // Breadth-first over PCI and CPU links: hops from the GPU.
  std::map<std::string, int> hops{{gpu->id, 0}};
  std::deque<std::string> queue{gpu->id};
  while (!queue.empty()) {
    std::string cur = queue.front();
    queue.pop_front();
    for (const TopoLink& l : graph.links()) {
      if (l.kind == LinkKind::kNvlink) continue;
      const std::string* other = l.a == cur ? &l.b : l.b == cur ? &l.a : nullptr;
      if (!other || hops.count(*other)) continue;
      hops[*other] = hops[cur] + 1;
      queue.push_back(*other);
    }
  }
  std::vector<const TopoNode*> nics = graph.ofKind(TopoKind::kNic);
  auto distance = [&](const TopoNode* n) {
    auto it = hops.find(n->id);
    return it == hops.end() ? 1 << 30 : it->second;
  };
  std::stable_sort(nics.begin(), nics.end(),
                   [&](const TopoNode* x, const TopoNode* y) { return distance(x) < distance(y); });
  std::vector<std::string> names;
  for (const TopoNode* n : nics) names.push_back(n->name);
  return names;
}

}  // namespace tutti
