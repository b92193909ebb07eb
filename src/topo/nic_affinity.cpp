#include "src/topo/nic_affinity.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>

namespace tutti {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const TopoNode* byBusId(const TopoGraph& graph, TopoKind kind, const std::string& busId) {
  const std::string bus = lower(busId);
  for (const TopoNode* n : graph.ofKind(kind))
    if (n->busId == bus) return n;
  return nullptr;
}

// Breadth-first over PCI and CPU links from `from`: each node's hops and
// the node it was reached from. NVLink edges do not count.
struct Reach {
  std::map<std::string, int> hops;
  std::map<std::string, std::string> parent;
};
Reach reachOverPci(const TopoGraph& graph, const std::string& from) {
  Reach r;
  r.hops[from] = 0;
  std::deque<std::string> queue{from};
  while (!queue.empty()) {
    std::string cur = queue.front();
    queue.pop_front();
    for (const TopoLink& l : graph.links()) {
      if (l.kind == LinkKind::kNvlink) continue;
      const std::string* other = l.a == cur ? &l.b : l.b == cur ? &l.a : nullptr;
      if (!other || r.hops.count(*other)) continue;
      r.hops[*other] = r.hops[cur] + 1;
      r.parent[*other] = cur;
      queue.push_back(*other);
    }
  }
  return r;
}

}  // namespace

const char* pciPathName(PciPath p) {
  switch (p) {
    case PciPath::kLoc: return "LOC";
    case PciPath::kPix: return "PIX";
    case PciPath::kPxb: return "PXB";
    case PciPath::kPhb: return "PHB";
    case PciPath::kSys: return "SYS";
  }
  return "?";
}

std::optional<PciPath> pciPathBetween(const TopoGraph& graph, const std::string& gpuBusId,
                                      const std::string& deviceBusId) {
  const TopoNode* gpu = byBusId(graph, TopoKind::kGpu, gpuBusId);
  const TopoNode* dev = byBusId(graph, TopoKind::kNic, deviceBusId);
  if (!gpu || !dev) return std::nullopt;
  if (gpu == dev) return PciPath::kLoc;
  Reach r = reachOverPci(graph, gpu->id);
  if (!r.hops.count(dev->id)) return std::nullopt;
  int switches = 0, cpus = 0;
  bool acrossPackages = false;
  for (std::string at = r.parent[dev->id]; at != gpu->id; at = r.parent[at]) {
    const TopoNode* n = graph.find(at);
    if (!n) continue;
    if (n->kind == TopoKind::kPciSwitch) ++switches;
    else if (n->kind == TopoKind::kMachine) acrossPackages = true;
    else ++cpus;  // a NUMA node or package: the host bridge
  }
  if (acrossPackages) return PciPath::kSys;
  if (cpus > 0) return PciPath::kPhb;
  return switches <= 1 ? PciPath::kPix : PciPath::kPxb;
}

std::vector<std::string> nicsNearestFirst(const TopoGraph& graph, const std::string& gpuBusId) {
  const TopoNode* gpu = byBusId(graph, TopoKind::kGpu, gpuBusId);
  if (!gpu) return {};
  const std::map<std::string, int> hops = reachOverPci(graph, gpu->id).hops;
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
