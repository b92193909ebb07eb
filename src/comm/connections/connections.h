// A communicator's connections: the transports in priority order (p2p, shm,
// then the network), the transport chosen for each peer and memory kind by
// canConnect, and the one table every plan draws its connections from. A
// device call's connections are stream-ordered (transport/stream_ordered.h):
// P2P inside a node where two devices reach each other, shared memory or
// the network elsewhere, their slots mapped into the device.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "src/bootstrap/socket_bootstrap.h"
#include "src/comm/connections/connection_table.h"
#include "src/comm/connections/connector.h"
#include "src/device/device_runtime.h"
#include "transport/transport.h"

namespace tutti {

struct ConnectionSettings {
  uint64_t magic = 0;            // names shared segments
  size_t hostSlotBytes = 0;      // host calls' chunk
  size_t deviceSlotBytes = 0;    // device calls' chunk
  int nslots = 8;
  double timeoutSeconds = 300;
  const std::atomic<bool>* abort = nullptr;
  int nics = 1;                  // channel c listens on interface c % nics
  int device = -1;               // this rank's device; -1: host calls only
  OpQueue* deviceQueue = nullptr;  // where device calls' kernels run
};

class Connections {
 public:
  // Chooses each pair's transport for each memory kind. For device calls
  // both ends must choose alike, so every rank's choices are gathered and
  // a pair takes the more general of its two (p2p only when both can).
  Status init(std::vector<std::unique_ptr<Transport>> transports, const ConnectionSettings& settings,
              SocketBootstrap& bootstrap);

  SendConnection* send(Memory m, int channel, int peer) const { return table_.send(m, channel, peer); }
  RecvConnection* recv(Memory m, int channel, int peer) const { return table_.recv(m, channel, peer); }
  // Registers with the connector every connection the plan uses for calls
  // on `m` that does not exist yet. False when nothing is missing.
  bool request(const Plan& plan, Memory m, Connector* connector);
  Transport* transportFor(Memory m, int peer) const { return chosen_[static_cast<int>(m)][peer]; }
  // "p2p/device", "socket/host-mapped": how calls on `m` reach the peer.
  std::string route(Memory m, int peer) const;
  ConnectionTable& table() { return table_; }
  const ConnectionTable& table() const { return table_; }
  // The device side's stream, once made (see Communicator::makeDeviceSide).
  void setDeviceQueue(OpQueue* q) { settings_.deviceQueue = q; }
  // Closes every connection (device ones once the stream is past them).
  void clear() { table_.reset(0); }

 private:
  ConnectionSpec specFor(Memory m, int channel, int peer, int sender) const;

  ConnectionSettings settings_;
  SocketBootstrap* bootstrap_ = nullptr;
  std::vector<std::unique_ptr<Transport>> transports_;  // priority order
  std::vector<Transport*> chosen_[kMemoryKinds];       // per peer (itself included)
  ConnectionTable table_;
};

}  // namespace tutti
