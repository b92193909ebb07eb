// The transports built into this library, in order of preference. A pair of
// ranks uses the first whose canConnect() says yes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/common/interfaces.h"
#include "transport/socket/streams.h"
#include "transport/transport.h"

namespace tutti {

struct TransportOptions {
  bool shmDisabled = false;
  std::vector<NetInterface> socketInterfaces;  // where the socket transport listens (one per NIC)
  SocketStreams socket;
};

// One instance of each transport for one communicator (they hold listeners).
Result<std::vector<std::unique_ptr<Transport>>> createTransports(const TransportOptions& options);

// Names of every transport compiled in, for tutti-info.
std::vector<std::string> builtinTransportNames();

}  // namespace tutti
