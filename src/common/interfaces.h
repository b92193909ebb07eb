// Network interfaces and the choice among them (TUTTI_SOCKET_IFNAME,
// TUTTI_SOCKET_FAMILY), following NCCL's rules.
#pragma once

#include <string>
#include <vector>

#include "src/common/socket.h"

namespace tutti {

struct NetInterface {
  std::string name;
  SocketAddress address;  // port 0
};

// Every up interface with an IPv4 or IPv6 address (link-local v6 skipped).
std::vector<NetInterface> listInterfaces();

// Selects from `all` by spec (NCCL grammar) and family (0: any). With an empty
// spec: everything but lo, docker* and virbr*, falling back to those when
// nothing else exists. An empty result is an error that lists what exists.
Result<std::vector<NetInterface>> selectInterfaces(const std::vector<NetInterface>& all,
                                                   const std::string& spec, int family);

// The interfaces chosen from the environment for this process.
Result<std::vector<NetInterface>> chooseInterfacesFromEnv();

// Whether the kernel lists an RDMA (verbs) device. Without one, neither
// libibverbs nor UCX's RDMA lanes need loading to say so: each costs about
// 10 ms of every init.
bool anyVerbsDevice();

}  // namespace tutti
