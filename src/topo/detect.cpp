// Detection: hwloc for packages, NUMA nodes and the PCI tree; sysfs for each
// NIC's speed, NUMA node and PCI device; NVML for GPUs and NVLink.
#include <hwloc.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <set>

#include "src/common/interfaces.h"
#include "src/common/text_file.h"
#include "src/topo/nvml.h"
#include "src/topo/topology.h"

namespace tutti {

namespace {

int readInt(const std::string& path, int fallback) {
  std::string s = readFirstLine(path);
  if (s.empty()) return fallback;
  char* end = nullptr;
  long v = strtol(s.c_str(), &end, 10);
  return end == s.c_str() ? fallback : static_cast<int>(v);
}

// The PCI bus id behind a network interface, "" for virtual ones.
std::string nicBusId(const std::string& ifname) {
  char target[PATH_MAX];
  std::string link = "/sys/class/net/" + ifname + "/device";
  ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return "";
  target[n] = 0;
  std::string s(target);
  std::string base = s.substr(s.rfind('/') + 1);
  // PCI ids look like 0000:3a:00.0; other buses (virtio, usb) are not PCI here.
  return base.size() == 12 && base[4] == ':' && base[7] == ':' ? base : "";
}

// "10.0.0.1:0" -> "10.0.0.1": interfaces carry no port.
std::string hostOnly(const SocketAddress& a) {
  std::string s = a.toString();
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ":0") == 0) s.resize(s.size() - 2);
  return s;
}

std::string busIdOf(hwloc_obj_t o) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%01x", o->attr->pcidev.domain, o->attr->pcidev.bus,
           o->attr->pcidev.dev, o->attr->pcidev.func);
  return buf;
}

class Detector {
 public:
  explicit Detector(std::vector<std::string>* notes) : notes_(notes) {}
  ~Detector() {
    if (topo_) hwloc_topology_destroy(topo_);
  }

  TopoGraph run() {
    g_.add({"machine", TopoKind::kMachine, "", "", -1, 0, 0, {}});
    loadHwloc();
    addCpus();
    addNics();
    addGpus();
    return std::move(g_);
  }

 private:
  void note(const std::string& s) {
    if (notes_) notes_->push_back(s);
  }

  void loadHwloc() {
    if (hwloc_topology_init(&topo_) != 0) {
      topo_ = nullptr;
      note("hwloc_topology_init failed: no CPU or PCI detail");
      return;
    }
    hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (hwloc_topology_load(topo_) != 0) {
      hwloc_topology_destroy(topo_);
      topo_ = nullptr;
      note("hwloc_topology_load failed: no CPU or PCI detail");
    }
  }

  void addCpus() {
    if (!topo_) return;
    int packages = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
    for (int i = 0; i < packages; ++i) {
      hwloc_obj_t p = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, i);
      int cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, p->cpuset, HWLOC_OBJ_CORE);
      std::string id = "package" + std::to_string(i);
      g_.add({id, TopoKind::kPackage, "", "", -1, cores, 0, {}});
      g_.link("machine", id, LinkKind::kInterSocket, kInterSocketGBs);
    }
    int numas = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < numas; ++i) {
      hwloc_obj_t n = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, i);
      int cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, n->cpuset, HWLOC_OBJ_CORE);
      std::string id = "numa" + std::to_string(n->os_index);
      g_.add({id, TopoKind::kNuma, "", "", static_cast<int>(n->os_index), cores, 0, {}});
      hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, n->parent);
      int pkgIndex = pkg ? static_cast<int>(pkg->logical_index) : 0;
      g_.link(packages > 0 ? "package" + std::to_string(pkgIndex) : "machine", id, LinkKind::kLocal,
              kLocalGBs);
    }
  }

  // Where a device without a better parent hangs: its NUMA node, else the machine.
  std::string cpuAnchor(int numa) const {
    std::string id = "numa" + std::to_string(numa);
    if (numa >= 0 && g_.find(id)) return id;
    auto numas = g_.ofKind(TopoKind::kNuma);
    return numas.empty() ? "machine" : numas.front()->id;
  }

  // Adds the PCI switches above a device and links the device to the first;
  // the topmost hangs off the device's NUMA node.
  void attachPci(const std::string& nodeId, const std::string& busId, int numa) {
    hwloc_obj_t dev = nullptr;
    if (topo_) {
      for (hwloc_obj_t o = hwloc_get_next_pcidev(topo_, nullptr); o; o = hwloc_get_next_pcidev(topo_, o))
        if (busIdOf(o) == busId) dev = o;
    }
    if (!dev) {
      g_.link(cpuAnchor(numa), nodeId, LinkKind::kPci, kPciGen4x16GBs);
      return;
    }
    double bw = dev->attr->pcidev.linkspeed > 0 ? dev->attr->pcidev.linkspeed : kPciGen4x16GBs;
    std::string below = nodeId;
    for (hwloc_obj_t p = dev->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
      if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) break;
      std::string sw = "pci:" + busIdOf(p);
      g_.add({sw, TopoKind::kPciSwitch, "", busIdOf(p), numa, 0, 0, {}});
      g_.link(sw, below, LinkKind::kPci, bw);
      below = sw;
    }
    g_.link(cpuAnchor(numa), below, LinkKind::kPci, bw);
  }

  void addNics() {
    std::set<std::string> seen;
    for (const NetInterface& i : listInterfaces()) {
      if (i.name == "lo") continue;
      std::string id = "nic:" + i.name;
      if (const TopoNode* existing = g_.find(id)) {  // another address of a known NIC
        TopoNode n = *existing;
        n.addresses.push_back(hostOnly(i.address));
        g_.add(n);
        continue;
      }
      TopoNode n;
      n.id = id;
      n.kind = TopoKind::kNic;
      n.name = i.name;
      n.busId = nicBusId(i.name);
      n.numa = readInt("/sys/class/net/" + i.name + "/device/numa_node", -1);
      int mbps = readInt("/sys/class/net/" + i.name + "/speed", -1);
      n.speedGbps = mbps > 0 ? mbps / 1000.0 : 0;
      n.addresses.push_back(hostOnly(i.address));
      g_.add(n);
      if (n.busId.empty()) g_.link(cpuAnchor(n.numa), id, LinkKind::kLocal, kLocalGBs);
      else attachPci(id, n.busId, n.numa);
    }
  }

  void addGpus() {
    std::string why;
    std::vector<NvmlGpu> gpus = queryNvmlGpus(&why);
    if (!why.empty()) note(why);
    for (size_t i = 0; i < gpus.size(); ++i) {
      std::string id = "gpu" + std::to_string(i);
      int numa = readInt("/sys/bus/pci/devices/" + gpus[i].busId + "/numa_node", -1);
      g_.add({id, TopoKind::kGpu, gpus[i].name, gpus[i].busId, numa, 0, 0, {}});
      attachPci(id, gpus[i].busId, numa);
    }
    // NVLinks: to another GPU, or to an NVSwitch (a switch node of its own).
    for (size_t i = 0; i < gpus.size(); ++i)
      for (const std::string& peer : gpus[i].nvlinkPeers) {
        std::string target;
        for (size_t j = 0; j < gpus.size(); ++j)
          if (gpus[j].busId == peer) target = "gpu" + std::to_string(j);
        if (target.empty()) {
          target = "nvswitch:" + peer;
          g_.add({target, TopoKind::kPciSwitch, "nvswitch", peer, -1, 0, 0, {}});
        }
        // Each end reports the link; count it from the lower id only.
        if (target.rfind("gpu", 0) == 0 && target < "gpu" + std::to_string(i)) continue;
        g_.link("gpu" + std::to_string(i), target, LinkKind::kNvlink, kNvlinkGBs);
      }
  }

  std::vector<std::string>* notes_;
  hwloc_topology_t topo_ = nullptr;
  TopoGraph g_;
};

}  // namespace

TopoGraph detectTopology(std::vector<std::string>* notes) { return Detector(notes).run(); }

}  // namespace tutti
