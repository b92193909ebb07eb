#include "src/topo/topology.h"

#include <hwloc.h>

namespace tutti {

TopologySummary detectTopology() {
  TopologySummary s;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    s.error = "hwloc_topology_init failed";
    return s;
  }
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo) != 0) {
    s.error = "hwloc_topology_load failed";
    hwloc_topology_destroy(topo);
    return s;
  }
  s.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  s.numaNodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  s.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  s.hardwareThreads = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o; o = hwloc_get_next_osdev(topo, o))
    if (o->name) s.osDevices.push_back(o->name);
  hwloc_topology_destroy(topo);
  return s;
}

}  // namespace tutti
