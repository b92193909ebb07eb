// Verbs transport (TUTTI_NET=ib): RC queue pairs on the RDMA ports that
// TUTTI_IB_HCA selects, channels spread over the ports. A TCP listener per
// communicator carries each connection's handshake (the sender's half; the
// receiver's travels in the handle) and then tells each end when the other
// process is gone. Unavailable, with the reason, where libibverbs or an
// active port is missing.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "src/common/interfaces.h"
#include "src/common/newcomers.h"
#include "src/common/socket.h"
#include "transport/ibverbs/device.h"
#include "transport/ibverbs/endpoint_info.h"
#include "transport/ibverbs/gdr.h"
#include "transport/transport.h"

namespace tutti {

// What decides GPUDirect RDMA for this rank: its device and where it sits.
struct GdrContext {
  int device = -1;                   // -1: host-only
  const TopoGraph* topology = nullptr;
};

class IbTransport final : public Transport {
 public:
  static Result<std::unique_ptr<IbTransport>> create(const std::vector<NetInterface>& ifaces,
                                                     const GdrContext& gdr = {});
  // The ports it would use, or why it cannot run here.
  static Status probe(std::string* description);
  // Per port, whether device calls would use GPUDirect RDMA and why.
  static std::vector<std::string> describeGdr(const GdrContext& gdr);

  const char* name() const override { return "ib"; }
  // Any pair; device calls through GPU memory the NIC reaches (GPUDirect
  // RDMA, where chooseGdr allows it) or slots mapped into the device.
  bool canConnect(const RankInfo&, const RankInfo&, Memory) const override { return true; }
  const char* slotPlace(Memory memory) const override;
  Result<std::unique_ptr<RecvConnection>> listen(const ConnectionSpec& spec,
                                                 ConnectionHandle* handle) override;
  Result<std::unique_ptr<SendConnection>> connect(const ConnectionSpec& spec,
                                                  const ConnectionHandle& handle) override;
  Status accept(const ConnectionSpec& spec, RecvConnection& connection) override;

 private:
  IbTransport() = default;
  size_t portFor(const ConnectionSpec& spec) const { return spec.nic % devices_.size(); }
  IbDevice& deviceFor(const ConnectionSpec& spec) { return *devices_[portFor(spec)]; }
  // The slot ring of one connection end: GPU memory when GPUDirect RDMA serves it.
  Result<RegisteredBuffer> allocateSlots(const ConnectionSpec& spec);
  std::vector<std::unique_ptr<IbDevice>> devices_;
  std::vector<GdrChoice> gdr_;  // by port
  Socket listener_;
  // Handshakes that came before their accept(), by connection id.
  std::unique_ptr<Newcomers> newcomers_;  // accepted, handshake not yet read
  std::map<uint32_t, Socket> early_;
  std::map<uint32_t, IbEndpointInfo> pendingInfo_;
};

}  // namespace tutti
