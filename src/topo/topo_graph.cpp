#include <algorithm>
#include <map>

#include "src/common/json.h"
#include "src/topo/topology.h"

namespace tutti {

namespace {

struct KindName {
  TopoKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {{TopoKind::kMachine, "machine"}, {TopoKind::kPackage, "package"},
                                   {TopoKind::kNuma, "numa"},       {TopoKind::kPciSwitch, "pci-switch"},
                                   {TopoKind::kNic, "nic"},         {TopoKind::kGpu, "gpu"}};
struct LinkName {
  LinkKind kind;
  const char* name;
};
constexpr LinkName kLinkNames[] = {{LinkKind::kLocal, "local"},
                                   {LinkKind::kInterSocket, "inter-socket"},
                                   {LinkKind::kPci, "pci"},
                                   {LinkKind::kNvlink, "nvlink"}};

}  // namespace

const char* topoKindName(TopoKind k) {
  for (const auto& e : kKindNames)
    if (e.kind == k) return e.name;
  return "?";
}

const char* linkKindName(LinkKind k) {
  for (const auto& e : kLinkNames)
    if (e.kind == k) return e.name;
  return "?";
}

const std::string& TopoGraph::add(TopoNode node) {
  for (auto& n : nodes_)
    if (n.id == node.id) {
      n = std::move(node);
      return n.id;
    }
  nodes_.push_back(std::move(node));
  return nodes_.back().id;
}

void TopoGraph::link(const std::string& a, const std::string& b, LinkKind kind, double bandwidthGBs) {
  for (auto& l : links_)
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) {
      if (l.kind == kind) {  // parallel links of one kind add up (several NVLinks)
        l.bandwidthGBs += bandwidthGBs;
        return;
      }
    }
  links_.push_back({a, b, kind, bandwidthGBs});
}

const TopoNode* TopoGraph::find(const std::string& id) const {
  for (const auto& n : nodes_)
    if (n.id == id) return &n;
  return nullptr;
}

std::vector<const TopoNode*> TopoGraph::ofKind(TopoKind kind) const {
  std::vector<const TopoNode*> out;
  for (const auto& n : nodes_)
    if (n.kind == kind) out.push_back(&n);
  return out;
}

double TopoGraph::pathBandwidth(const std::string& from, const std::string& to) const {
  if (from == to) return 1e9;
  // Widest path: Dijkstra on the bottleneck (graphs here have tens of nodes).
  std::map<std::string, double> best{{from, 1e9}};
  std::vector<std::string> done;
  for (;;) {
    std::string cur;
    double curBw = 0;
    for (const auto& [id, bw] : best)
      if (bw > curBw && std::find(done.begin(), done.end(), id) == done.end()) {
        cur = id;
        curBw = bw;
      }
    if (cur.empty()) return 0;
    if (cur == to) return curBw;
    done.push_back(cur);
    for (const auto& l : links_) {
      const std::string* other = l.a == cur ? &l.b : l.b == cur ? &l.a : nullptr;
      if (!other) continue;
      double bw = std::min(curBw, l.bandwidthGBs);
      if (bw > best[*other]) best[*other] = bw;
    }
  }
}

Json TopoGraph::toJson() const {
  Json nodes = Json::array();
  for (const auto& n : nodes_) {
    Json j = {{"id", n.id}, {"kind", topoKindName(n.kind)}};
    if (!n.name.empty()) j["name"] = n.name;
    if (!n.busId.empty()) j["busId"] = n.busId;
    if (n.numa >= 0) j["numa"] = n.numa;
    if (n.cores > 0) j["cores"] = n.cores;
    if (n.kind == TopoKind::kNic) {
      j["speedGbps"] = n.speedGbps;
      j["addresses"] = n.addresses;
    }
    nodes.push_back(std::move(j));
  }
  Json links = Json::array();
  for (const auto& l : links_)
    links.push_back({{"a", l.a}, {"b", l.b}, {"kind", linkKindName(l.kind)}, {"bandwidthGBs", l.bandwidthGBs}});
  return {{"format", "tutti-topology-1"}, {"nodes", std::move(nodes)}, {"links", std::move(links)}};
}

Result<TopoGraph> TopoGraph::fromJson(const Json& json) {
  if (!json.is_object() || !json.contains("nodes") || !json["nodes"].is_array())
    return InvalidArgument("a topology is an object with a \"nodes\" array (and \"links\")");
  TopoGraph g;
  for (const Json& j : jsonArray(json, "nodes")) {
    TopoNode n;
    n.id = jsonString(j, "id");
    if (n.id.empty()) return InvalidArgument("topology node without an \"id\"");
    const std::string kind = jsonString(j, "kind");
    bool known = false;
    for (const auto& e : kKindNames)
      if (kind == e.name) {
        n.kind = e.kind;
        known = true;
      }
    if (!known)
      return InvalidArgument("topology node " + n.id + ": unknown kind \"" + kind +
                             "\" (machine, package, numa, pci-switch, nic, gpu)");
    n.name = jsonString(j, "name");
    n.busId = jsonString(j, "busId");
    n.numa = static_cast<int>(jsonNumber(j, "numa", -1));
    n.cores = static_cast<int>(jsonNumber(j, "cores", 0));
    n.speedGbps = jsonNumber(j, "speedGbps", 0);
    for (const Json& a : jsonArray(j, "addresses"))
      if (a.is_string()) n.addresses.push_back(a.get<std::string>());
    if (g.find(n.id)) return InvalidArgument("topology node id " + n.id + " appears twice");
    g.add(std::move(n));
  }
  for (const Json& j : jsonArray(json, "links")) {
    const std::string a = jsonString(j, "a"), b = jsonString(j, "b"), kindName = jsonString(j, "kind");
    if (!g.find(a) || !g.find(b))
      return InvalidArgument("topology link " + a + " - " + b + " names a node that does not exist");
    LinkKind kind = LinkKind::kLocal;
    bool known = false;
    for (const auto& e : kLinkNames)
      if (kindName == e.name) {
        kind = e.kind;
        known = true;
      }
    if (!known)
      return InvalidArgument("topology link " + a + " - " + b + ": unknown kind \"" + kindName +
                             "\" (local, inter-socket, pci, nvlink)");
    double bw = jsonNumber(j, "bandwidthGBs", 0);
    if (bw <= 0) return InvalidArgument("topology link " + a + " - " + b + " needs bandwidthGBs > 0");
    g.links_.push_back({a, b, kind, bw});
  }
  return g;
}

std::string TopoGraph::describe() const {
  std::string s;
  char buf[256];
  snprintf(buf, sizeof(buf), "%d package(s), %d NUMA node(s), %d PCI switch(es), %d NIC(s), %d GPU(s)\n",
           count(TopoKind::kPackage), count(TopoKind::kNuma), count(TopoKind::kPciSwitch),
           count(TopoKind::kNic), count(TopoKind::kGpu));
  s += buf;
  for (const auto& n : nodes_) {
    std::string extra;
    if (!n.name.empty()) extra += " " + n.name;
    if (!n.busId.empty()) extra += " bus " + n.busId;
    if (n.cores > 0) extra += " " + std::to_string(n.cores) + " cores";
    if (n.numa >= 0) extra += " numa " + std::to_string(n.numa);
    if (n.kind == TopoKind::kNic) {
      snprintf(buf, sizeof(buf), " %.0f Gbit/s", n.speedGbps);
      extra += n.speedGbps > 0 ? buf : " speed unknown";
      for (const auto& a : n.addresses) extra += " " + a;
    }
    snprintf(buf, sizeof(buf), "  %-10s %s%s\n", topoKindName(n.kind), n.id.c_str(), extra.c_str());
    s += buf;
  }
  for (const auto& l : links_) {
    snprintf(buf, sizeof(buf), "  link %s - %s: %s %.1f GB/s\n", l.a.c_str(), l.b.c_str(),
             linkKindName(l.kind), l.bandwidthGBs);
    s += buf;
  }
  return s;
}

}  // namespace tutti
