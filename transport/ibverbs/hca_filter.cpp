#include "transport/ibverbs/hca_filter.h"

#include "src/common/name_list.h"

namespace tutti {

std::string describePort(const IbPortDesc& p) {
  char speed[32];
  snprintf(speed, sizeof(speed), "%.0f Gbit/s", p.gbps);
  return p.device + ":" + std::to_string(p.port) + " (" + (p.ethernet ? "RoCE" : "InfiniBand") + ", " +
         speed + ", " + (p.active ? "active" : "down") + ")";
}

Result<std::vector<IbPortDesc>> selectIbPorts(const std::vector<IbPortDesc>& available,
                                              const std::string& spec) {
  if (available.empty()) return InvalidUsage("no RDMA device found (libibverbs lists none)");
  NameList filter(spec);
  std::vector<IbPortDesc> chosen;
  for (const IbPortDesc& p : available)
    if (p.active && filter.matches(p.device, p.port)) chosen.push_back(p);
  if (!chosen.empty()) return chosen;
  std::string all;
  for (const IbPortDesc& p : available) all += (all.empty() ? "" : ", ") + describePort(p);
  if (spec.empty()) return InvalidUsage("no active RDMA port among " + all);
  return InvalidUsage("TUTTI_IB_HCA=" + spec + " selects no active port among " + all);
}

}  // namespace tutti
