// The machine as a graph, as NCCL's topology is: CPU packages, NUMA nodes, PCI
// switches, NICs and GPUs joined by links with bandwidths. Detected with
// hwloc, sysfs and NVML, or read from a file so that a machine tutti is not
// running on can be planned for (TUTTI_TOPO_FILE); written out with
// TUTTI_TOPO_DUMP_FILE.
#pragma once

#include <nlohmann/json_fwd.hpp>  // the whole header only where a file reads or writes JSON
#include <string>
#include <vector>

#include "src/common/status.h"

namespace tutti {

enum class TopoKind { kMachine, kPackage, kNuma, kPciSwitch, kNic, kGpu };
const char* topoKindName(TopoKind k);

enum class LinkKind { kLocal, kInterSocket, kPci, kNvlink };
const char* linkKindName(LinkKind k);

struct TopoNode {
  std::string id;    // unique in the graph: "package0", "numa1", "pci:0000:3a:00.0", "nic:eth0", "gpu0"
  TopoKind kind = TopoKind::kMachine;
  std::string name;  // interface name, GPU model, ...
  std::string busId; // PCI bus id of devices and switches, lower case
  int numa = -1;     // NUMA node the device is attached to (-1: unknown)
  int cores = 0;     // packages and NUMA nodes
  double speedGbps = 0;  // NICs: link speed (0: unknown)
  std::vector<std::string> addresses;  // NICs: IP addresses
};

struct TopoLink {
  std::string a, b;        // node ids
  LinkKind kind = LinkKind::kLocal;
  double bandwidthGBs = 0; // per direction
};

class TopoGraph {
 public:
  const std::vector<TopoNode>& nodes() const { return nodes_; }
  const std::vector<TopoLink>& links() const { return links_; }
  // Adds a node (replacing one with the same id) and returns its id.
  const std::string& add(TopoNode node);
  void link(const std::string& a, const std::string& b, LinkKind kind, double bandwidthGBs);
  const TopoNode* find(const std::string& id) const;
  std::vector<const TopoNode*> ofKind(TopoKind kind) const;
  int count(TopoKind kind) const { return static_cast<int>(ofKind(kind).size()); }
  // The widest path between two nodes: the best bottleneck bandwidth (GB/s),
  // 0 when they are not connected.
  double pathBandwidth(const std::string& from, const std::string& to) const;

  nlohmann::json toJson() const;
  static Result<TopoGraph> fromJson(const nlohmann::json& json);
  // Human-readable, one node per line with its links.
  std::string describe() const;

 private:
  std::vector<TopoNode> nodes_;
  std::vector<TopoLink> links_;
};

// Typical bandwidths (GB/s per direction) where nothing better is known.
constexpr double kLocalGBs = 40;        // within a package
constexpr double kInterSocketGBs = 20;  // between packages
constexpr double kPciGen4x16GBs = 24;
constexpr double kNvlinkGBs = 25;       // one NVLink 4 link

// This machine, detected (hwloc, sysfs, NVML). Never fails: what cannot be
// read is left out and said in `notes`.
TopoGraph detectTopology(std::vector<std::string>* notes = nullptr);

// Detection shared by the processes of a host (topo_cache.cpp): the first
// probes and leaves the graph in `dir`, the others read it.
TopoGraph detectTopologyOncePerHost(const std::string& dir, std::vector<std::string>* notes = nullptr);
// The cache file's name: what would change the answer, hashed.
std::string topologyCacheKey();
// Where the cache lives, made if missing: TUTTI_CACHE_DIR; else "tutti" in
// the user's runtime directory (XDG_RUNTIME_DIR: this host's, in memory) or
// cache directory (XDG_CACHE_HOME, else ~/.cache); /tmp/tutti-UID when none
// can be made. Not /dev/shm: that is the jobs' shared memory.
std::string topologyCacheDir();
// At most this many cache files of a user are kept in the directory.
constexpr int kTopologyCacheFiles = 8;

// What a communicator uses: TUTTI_TOPO_FILE when set, else detection; then
// written to TUTTI_TOPO_DUMP_FILE when set (JSON).
Result<TopoGraph> loadTopology();
Result<TopoGraph> readTopologyFile(const std::string& path);
Status writeTopologyFile(const TopoGraph& graph, const std::string& path);

}  // namespace tutti
