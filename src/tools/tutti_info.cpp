// tutti-info: the version, the transports built in, the interfaces this
// process would use, the machine as hwloc sees it, and every tunable with its
// value, where the value came from, and what it means.
#include <cstdio>
#include <string>

#include "src/common/config.h"
#include "src/common/interfaces.h"
#include "src/topo/topology.h"
#include "kernels/reducer.h"
#include "transport/registry.h"
#include "tutti/tutti.h"

using namespace tutti;

int main() {
  int version = 0;
  tuttiGetVersion(&version);
  printf("tutti %d.%d.%d (version code %d)\n", TUTTI_MAJOR, TUTTI_MINOR, TUTTI_PATCH, version);
  printf("host reducer: %s\n", hostReducer().name());

  printf("\ntransports built in:");
  for (const auto& name : builtinTransportNames()) printf(" %s", name.c_str());
  printf("\n");

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

  TopologySummary topo = detectTopology();
  printf("\ntopology (hwloc):");
  if (!topo.error.empty()) {
    printf(" %s\n", topo.error.c_str());
  } else {
    printf(" %d package(s), %d NUMA node(s), %d core(s), %d hardware thread(s)\n", topo.packages,
           topo.numaNodes, topo.cores, topo.hardwareThreads);
    for (const auto& d : topo.osDevices) printf("  os device %s\n", d.c_str());
  }

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
