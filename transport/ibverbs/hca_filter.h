// Which RDMA ports to use: every active port the TUTTI_IB_HCA list selects
// (NCCL's grammar: mlx5_0:1,mlx5_1 by prefix; '=' exact; '^' excludes).
#pragma once

#include <string>
#include <vector>

#include "src/common/status.h"

namespace tutti {

struct IbPortDesc {
  std::string device;  // "mlx5_0"
  int port = 1;
  bool active = false;
  bool ethernet = false;  // RoCE; else InfiniBand
  double gbps = 0;
};

// The ports to use, in the order given; an error naming the list and what
// exists when nothing usable is selected.
Result<std::vector<IbPortDesc>> selectIbPorts(const std::vector<IbPortDesc>& available,
                                              const std::string& spec);

// "mlx5_0:1 (InfiniBand, 200 Gbit/s, active)"
std::string describePort(const IbPortDesc& p);

}  // namespace tutti
