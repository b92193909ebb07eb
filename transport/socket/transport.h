// TCP transport: works between any two ranks that can reach each other's
// chosen interface. One listener per communicator accepts every incoming
// connection; a hello naming the connection id pairs it with its receiver.
#pragma once

#include <map>
#include <memory>

#include "src/common/interfaces.h"
#include "src/common/socket.h"
#include "transport/transport.h"

namespace tutti {

class SocketTransport final : public Transport {
 public:
  static Result<std::unique_ptr<SocketTransport>> create(const NetInterface& iface);
  const char* name() const override { return "socket"; }
  bool canConnect(const RankInfo&, const RankInfo&) const override { return true; }
  Result<std::unique_ptr<RecvConnection>> listen(const ConnectionSpec& spec,
                                                 ConnectionHandle* handle) override;
  Result<std::unique_ptr<SendConnection>> connect(const ConnectionSpec& spec,
                                                  const ConnectionHandle& handle) override;
  Status accept(const ConnectionSpec& spec, RecvConnection& connection) override;

 private:
  SocketTransport() = default;
  Socket listener_;
  NetInterface iface_;
  std::map<uint32_t, Socket> early_;  // connections that arrived before their accept()
};

}  // namespace tutti
