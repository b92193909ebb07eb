#include "transport/ibverbs/gdr.h"

#include <strings.h>

namespace tutti {

Result<PciPath> parseGdrLevel(const std::string& value) {
  for (int i = 0; i <= static_cast<int>(PciPath::kSys); ++i) {
    PciPath p = static_cast<PciPath>(i);
    if (strcasecmp(value.c_str(), pciPathName(p)) == 0 || value == std::to_string(i)) return p;
  }
  return InvalidArgument("TUTTI_NET_GDR_LEVEL=" + value + ": expected LOC, PIX, PXB, PHB, SYS or 0-4");
}

GdrChoice chooseGdr(const GdrFacts& f) {
  const std::string level = std::string("TUTTI_NET_GDR_LEVEL=") + pciPathName(f.level);
  if (!f.realDevice) return {false, "no CUDA device on this rank"};
  if (f.level == PciPath::kLoc) return {false, level + " turns it off"};
  if (!f.peerMemory) return {false, "the NIC cannot reach GPU memory (no nvidia_peermem module)"};
  if (!f.path) return {false, f.nic + "'s distance from the GPU is unknown (not in the topology)"};
  const std::string where = f.nic + " is " + pciPathName(*f.path) + " from the GPU";
  if (*f.path > f.level) return {false, where + ", beyond " + level};
  return {true, where + ", within " + level};
}

}  // namespace tutti
