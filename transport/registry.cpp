#include "transport/registry.h"

#include "transport/shm/transport.h"
#include "transport/socket/transport.h"

namespace tutti {

Result<std::vector<std::unique_ptr<Transport>>> createTransports(const TransportOptions& options) {
  std::vector<std::unique_ptr<Transport>> list;
  if (!options.shmDisabled) list.push_back(std::make_unique<ShmTransport>());
  TUTTI_ASSIGN_OR_RETURN(auto socket, SocketTransport::create(options.socketInterfaces, options.socket));
  list.push_back(std::move(socket));
  return list;
}

std::vector<std::string> builtinTransportNames() { return {"shm", "socket"}; }

}  // namespace tutti
