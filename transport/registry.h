// The transports built into this library, in priority order: for device
// calls P2P between GPUs of a node that reach each other (unless
// TUTTI_P2P_DISABLE), then shared memory between ranks of one host (unless
// TUTTI_SHM_DISABLE), then the one network transport TUTTI_NET names
// (socket, ucx or ib), by default the fastest one usable here. Each says by
// canConnect which pairs and memory it serves.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/common/interfaces.h"
#include "transport/transport.h"

namespace tutti {

class TopoGraph;

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

// Per RDMA port, whether device calls of a rank on `device` would keep their
// slots in GPU memory (GPUDirect RDMA, TUTTI_NET_GDR_LEVEL) and why.
std::vector<std::string> describeGpuDirect(int device, const TopoGraph* topology);

struct TransportOptions {
  bool p2pDisabled = false;
  int device = -1;                  // this rank's device (-1: host-only)
  std::vector<std::string> busIds;  // every rank's device, by PCI bus id ("" for none)
  const TopoGraph* topology = nullptr;  // this machine: how far each NIC is from the device
  bool shmDisabled = false;
  NetKind net = NetKind::kSocket;
  std::vector<NetInterface> socketInterfaces;  // where the socket transport listens (one per NIC)
  AllgatherBlobs swap;  // UCX swaps worker addresses through it
  size_t chunkBytes = 0;  // the largest chunk a connection carries (one slot)
};

// One instance of each transport for one communicator (they hold listeners),
// the same list on every rank whose options agree.
Result<std::vector<std::unique_ptr<Transport>>> createTransports(const TransportOptions& options);

}  // namespace tutti
