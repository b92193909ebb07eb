// tutti-info: the version, the transports built in, the interfaces this
// process would use, the topology (detected, or TUTTI_TOPO_FILE), and every
// tunable with its value, where the value came from, and what it means.
// `tutti-info --plan NODES RANKS_PER_NODE` shows what the planner and the
// cost model would do for such a job on machines like this one (or like the
// TUTTI_TOPO_FILE one).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "src/comm/comm_config.h"
#include "src/common/config.h"
#include "src/common/interfaces.h"
#include "src/plan/planner.h"
#include "src/plan/tree.h"
#include "src/plan/tuner.h"
#include "src/topo/topology.h"
#include "kernels/reducer.h"
#include "src/device/device_runtime.h"
#include "transport/registry.h"
#include "tutti/tutti.h"

using namespace tutti;

namespace {

std::string ranks(const std::vector<int>& v) {
  std::string s;
  for (int r : v) s += (s.empty() ? "" : " ") + std::to_string(r);
  return s;
}

// What a job of `nodes` x `perNode` ranks would run: rings, trees and the
// cost model's choice per collective and size.
int showPlan(int nodes, int perNode, bool interleaved) {
  int nics = 1;
  float gbps = 10;
  auto topo = loadTopology();
  if (topo.ok() && topo->count(TopoKind::kNic) > 0) {
    nics = topo->count(TopoKind::kNic);
    gbps = 0;
    for (const TopoNode* n : topo->ofKind(TopoKind::kNic)) gbps += n->speedGbps > 0 ? n->speedGbps : 10;
  }
  NodeLayout layout = NodeLayout::uniform(nodes, perNode, interleaved, nics, gbps, perNode);
  auto config = tunableInt("NCHANNELS");
  int channels = config.ok() && config.value() > 0 ? static_cast<int>(config.value()) : std::max(2, nics);
  auto order = tunableString("RING_ORDER") == "rank" ? RingOrder::kRank : RingOrder::kTopo;
  printf("%s; %d NIC(s) per node, %.0f Gbit/s\n", layout.describe().c_str(), nics, gbps);
  std::vector<int> ring0 = layout.ring(0, order);
  for (int c = 0; c < channels; ++c) {
    std::vector<int> ring = layout.ring(c, order);
    printf("  ring %d (NIC %d): %s  (%d node crossings)\n", c, c % nics, ranks(ring).c_str(),
           layout.crossings(ring));
  }
  for (int which = 0; which < 2; ++which) {
    NodeTree t = buildNodeTree(layout.nnodes(), which);
    printf("  node tree %d: root node %d, depth %d; parent of each node:", which, t.root, treeDepth(t));
    for (int p : t.parent) printf(" %d", p);
    printf("\n");
  }
  TuneContext ctx = TuneContext::fromLayout(layout, ring0, channels, config.ok() && config.value() > 0, 128 << 10);
  auto filter = AlgoFilter::parse(tunableString("ALGO"));
  if (!filter.ok()) {
    fprintf(stderr, "%s\n", filter.status().message().c_str());
    return 1;
  }
  ctx.filter = filter.value();
  printf("\n  %-14s %12s  %-7s %8s %10s %14s\n", "collective", "bytes", "algo", "channels", "chunk", "predicted us");
  for (Collective c : {Collective::kAllReduce, Collective::kBroadcast, Collective::kAllGather})
    for (size_t bytes = 8; bytes <= (size_t(1) << 30); bytes *= 32) {
      TuneChoice t = tune(ctx, c, bytes);
      printf("  %-14s %12zu  %-7s %8d %9zuK %14.1f\n", collectiveName(c), bytes,
             algorithmName(t.algorithm), t.nchannels, t.chunkBytes >> 10, t.predictedUs);
    }
  return 0;
}

// Device buffers: what this build and this machine offer.
void printDevices() {
  DeviceRuntime* cuda = cudaDeviceRuntime();
  if (!cuda) {
    printf("CUDA: not built (device buffers are refused)\n");
    return;
  }
  int n = cuda->deviceCount();
  if (n == 0) {
    printf("CUDA: built; no usable device: %s\n", cuda->unavailableReason().c_str());
    return;
  }
  printf("CUDA: %d device(s); device buffers go GPU to GPU (p2p) between devices that reach each "
         "other on one node, else are staged through pinned host memory\n", n);
  for (int d = 0; d < n; ++d) {
    auto bus = cuda->pciBusId(d);
    std::string peers;
    for (int p = 0; p < n; ++p)
      if (p != d && cuda->canAccessPeer(d, p)) peers += " " + std::to_string(p);
    printf("  device %d  %s  p2p with:%s\n", d, bus.ok() ? bus->c_str() : bus.status().message().c_str(),
           peers.empty() ? " itself only" : peers.c_str());
  }
}

// What one communicator holds per rank, from the settings: the numbers
// tuttiCommMemoryHeld and the INFO log report for a live one.
void printMemory() {
  auto config = CommConfig::fromEnv();
  if (!config.ok()) {
    printf("\nmemory: %s\n", config.status().message().c_str());
    return;
  }
  const CommConfig& c = config.value();
  const double mib = 1 << 20;
  const double perConnection = static_cast<double>(c.slotBytes) * c.nslots / mib;
  const double perDeviceConnection = static_cast<double>(c.deviceSlotBytes) * c.nslots / mib;
  printf("\nmemory one communicator holds per rank (slots; a shared segment counts at both ends):\n");
  printf("  a connection for host calls: %d slots x %zu KiB = %.1f MiB (TUTTI_NSTEPS, TUTTI_BUFFSIZE)\n",
         c.nslots, c.slotBytes >> 10, perConnection);
  printf("  at init: the rings, up to %d channel(s) x 2 directions = %.1f MiB of host memory\n", c.maxChannels,
         2.0 * c.maxChannels * perConnection);
  printf("  later, per peer a plan first reaches (trees, send/recv, TUTTI_DETERMINISTIC): 2 x %.1f MiB a channel\n",
         perConnection);
  printf("  device calls: %.1f MiB a connection (TUTTI_P2P_BUFFSIZE), in device memory between GPUs (p2p),\n"
         "  else page-locked host memory\n",
         perDeviceConnection);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--plan") == 0)
    return showPlan(std::atoi(argv[2]), std::atoi(argv[3]), argc > 4 && std::strcmp(argv[4], "--interleaved") == 0);
  if (argc > 1) {
    fprintf(stderr, "usage: tutti-info [--plan NODES RANKS_PER_NODE [--interleaved]]\n");
    return 2;
  }
  int version = 0;
  tuttiGetVersion(&version);
  printf("tutti %d.%d.%d (version code %d)\n", TUTTI_MAJOR, TUTTI_MINOR, TUTTI_PATCH, version);
  printf("host reducer: %s\n", hostReducer().name());
  printDevices();

  printf("\ntransports: shm between ranks of a host (TUTTI_SHM_DISABLE=1 turns it off), and\n");
  printf("network transports (TUTTI_NET), in the order the default prefers them:\n");
  for (const NetAvailability& n : probeNets())
    printf("  %-7s %-9s %-10s %s\n", netName(n.kind), n.built ? "built" : "not built",
           n.usable ? "usable" : "unusable", n.detail.c_str());
  auto net = chooseNet(tunableString("NET"));
  if (net.ok()) printf("  chosen: %s\n", netName(net.value()));
  else printf("  chosen: none: %s\n", net.status().message().c_str());
  {
    // The device a rank would use: device 0 where there is one.
    int device = deviceRuntime().deviceCount() > 0 ? 0 : -1;
    auto topology = loadTopology();
    printf("  GPUDirect RDMA over ib (TUTTI_NET_GDR_LEVEL=%s) for device calls on %s:\n",
           tunableString("NET_GDR_LEVEL").c_str(), device >= 0 ? "device 0" : "no device");
    for (const auto& line : describeGpuDirect(device, topology.ok() ? &topology.value() : nullptr))
      printf("    %s\n", line.c_str());
  }

  printf("\nnetwork interfaces:\n");
  for (const auto& i : listInterfaces()) printf("  %-12s %s\n", i.name.c_str(), i.address.toString().c_str());
  auto chosen = chooseInterfacesFromEnv();
  if (chosen.ok()) {
    printf("  chosen (TUTTI_SOCKET_IFNAME):");
    for (const auto& i : chosen.value()) printf(" %s (%s)", i.name.c_str(), i.address.toString().c_str());
    printf("\n");
  } else {
    printf("  chosen: none: %s\n", chosen.status().message().c_str());
  }

  auto topo = loadTopology();
  printf("\ntopology (%s):", tunableString("TOPO_FILE").empty() ? "detected" : "TUTTI_TOPO_FILE");
  if (!topo.ok()) printf(" %s\n", topo.status().message().c_str());
  else printf(" %s", topo->describe().c_str());
  std::vector<std::string> notes;
  if (tunableString("TOPO_FILE").empty()) detectTopology(&notes);
  for (const auto& n : notes) printf("  note: %s\n", n.c_str());

  printMemory();

  printf("\ntunables (TUTTI_<name>, else NCCL_<name>, else default):\n");
  printf("  %-16s %-12s %-14s %s\n", "name", "value", "from", "meaning");
  for (const auto& t : allTunables()) {
    std::string source;
    std::string value = tunableString(t.name, &source);
    printf("  %-16s %-12s %-14s %s\n", t.name, value.empty() ? "\"\"" : value.c_str(),
           source.c_str(), t.meaning);
  }
  return 0;
}
