// The transports built into this library. Ranks of one host use shared
// memory (unless TUTTI_SHM_DISABLE); everything else goes over the one
// network transport TUTTI_NET names (socket, ucx or ib), by default the
// fastest one usable here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/common/interfaces.h"
#include "transport/socket/streams.h"
#include "transport/transport.h"
#include "transport/ucx/address_swap.h"

namespace tutti {

enum class NetKind : int32_t { kSocket = 0, kUcx = 1, kIb = 2 };
const char* netName(NetKind kind);

// One network transport: compiled in, usable on this machine, and why not.
struct NetAvailability {
  NetKind kind;
  bool built = false;
  bool usable = false;
  bool rdma = false;   // moves data over an RDMA fabric here
  std::string detail;  // what it would use, or why it cannot run
};
// Every network transport, fastest first.
std::vector<NetAvailability> probeNets();

// TUTTI_NET's choice (case-insensitive, as NCCL_NET's "IB" or "Socket"), or
// by default the fastest usable: a transport on an RDMA fabric (ib, else
// UCX when it has RDMA lanes), else the socket transport. A named transport
// that cannot run is an error saying why.
Result<NetKind> chooseNet(const std::string& requested);

struct TransportOptions {
  bool shmDisabled = false;
  NetKind net = NetKind::kSocket;
  std::vector<NetInterface> socketInterfaces;  // where the socket transport listens (one per NIC)
  SocketStreams socket;
  AddressSwap swap;  // UCX swaps worker addresses through it
  size_t chunkBytes = 0;  // the largest chunk a connection carries (one slot)
};

// One instance of each transport for one communicator (they hold listeners).
// Shared memory comes first, so pairs on one host use it when they can.
Result<std::vector<std::unique_ptr<Transport>>> createTransports(const TransportOptions& options);

}  // namespace tutti
