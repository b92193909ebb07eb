// TCP transport: works between any two ranks that can reach each other's
// chosen interfaces. One listener per interface (NIC) accepts every incoming
// socket; a hello naming the connection id and stream index pairs it with its
// receiver. Channels spread over the NICs through ConnectionSpec::nic.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "src/common/interfaces.h"
#include "src/common/socket.h"
#include "transport/socket/streams.h"
#include "transport/transport.h"

namespace tutti {

class SocketTransport final : public Transport {
 public:
  static Result<std::unique_ptr<SocketTransport>> create(const std::vector<NetInterface>& ifaces,
                                                         SocketStreams streams = {});
  const char* name() const override { return "socket"; }
  bool canConnect(const RankInfo&, const RankInfo&) const override { return true; }
  Result<std::unique_ptr<RecvConnection>> listen(const ConnectionSpec& spec,
                                                 ConnectionHandle* handle) override;
  Result<std::unique_ptr<SendConnection>> connect(const ConnectionSpec& spec,
                                                  const ConnectionHandle& handle) override;
  Status accept(const ConnectionSpec& spec, RecvConnection& connection) override;

 private:
  struct Listener {
    NetInterface iface;
    Socket socket;
    // Sockets that arrived before their accept(), by connection id.
    std::map<uint32_t, std::vector<Socket>> early;
  };
  SocketTransport() = default;
  Listener& listenerFor(const ConnectionSpec& spec) { return listeners_[spec.nic % listeners_.size()]; }
  std::vector<Listener> listeners_;
  SocketStreams streams_;
};

}  // namespace tutti
