// Which GID a RoCE port addresses peers with. RoCE v2 with an IPv4-mapped
// address routes across subnets, so it is preferred, as NCCL does; sysfs
// says each GID's type (gid_attrs/types/N) and value (gids/N).
#pragma once

#include <string>

#include "src/common/status.h"

namespace tutti {

// `portDir`: /sys/class/infiniband/<dev>/ports/<port>. `requested` >= 0
// (TUTTI_IB_GID_INDEX) is taken as given if that GID exists; -1 picks the
// first RoCE v2 IPv4-mapped GID, then the first RoCE v2, then index 0.
Result<int> chooseGidIndex(const std::string& portDir, int requested);

}  // namespace tutti
