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
#include "src/common/newcomers.h"
#include "transport/transport.h"

namespace tutti {

class SocketTransport final : public Transport {
 public:
  // With the streams TUTTI_NSOCKS_PERTHREAD and TUTTI_SOCKET_NTHREADS ask for.
  static Result<std::unique_ptr<SocketTransport>> create(const std::vector<NetInterface>& ifaces);
  static Result<std::unique_ptr<SocketTransport>> create(const std::vector<NetInterface>& ifaces,
                                                         SocketStreams streams);
  const char* name() const override { return "socket"; }
  std::string settings() const override;
  // Any pair; device calls through slots mapped into the device.
  bool canConnect(const RankInfo&, const RankInfo&, Memory) const override { return true; }
  Result<std::unique_ptr<RecvConnection>> listen(const ConnectionSpec& spec,
                                                 ConnectionHandle* handle) override;
  Result<std::unique_ptr<SendConnection>> connect(const ConnectionSpec& spec,
                                                  const ConnectionHandle& handle) override;
  Status accept(const ConnectionSpec& spec, RecvConnection& connection) override;

 private:
  // A connection's streams as they arrive, before or during its accept().
  struct Arrived {
    int senderRank = -1;
    std::vector<Socket> streams;  // by stream index; invalid until it comes
  };
  struct Listener {
    NetInterface iface;
    Socket socket;
    std::unique_ptr<Newcomers> newcomers;  // accepted, hello not yet read
    std::map<uint32_t, Arrived> early;     // by connection id
  };
  // Files a newcomer's hello under its connection; false (and a WARN) when
  // the hello is not one of this job's.
  bool file(Listener& l, Newcomers::Greeted greeted, uint64_t commMagic);
  SocketTransport() = default;
  Listener& listenerFor(const ConnectionSpec& spec) { return listeners_[spec.nic % listeners_.size()]; }
  std::vector<Listener> listeners_;
  SocketStreams streams_;
};

}  // namespace tutti
