// GPU-to-GPU transport between ranks of one node whose devices can address
// each other (the same GPU, or peers over NVLink or PCIe). It carries device
// calls only. The receiver owns a ring of slots in its device memory; the
// sender's copies and reduction kernels write chunks straight into it
// (through CUDA IPC from another process, through the plain pointer and peer
// access within one), and the receiver reduces them where they lie. The
// counters are a shared-memory control block, so both ends are the shm
// transport's connections over a ring that lives on the device; the
// communicator orders them with the device's stream like every device
// connection (transport/stream_ordered.h).
#pragma once

#include <string>
#include <vector>

#include "src/device/device_runtime.h"
#include "transport/transport.h"

namespace tutti {

class P2pTransport final : public Transport {
 public:
  // `busIds[r]` is rank r's device (PCI bus id, empty for a host-only rank).
  P2pTransport(DeviceRuntime& runtime, int device, std::vector<std::string> busIds)
      : runtime_(runtime), device_(device), busIds_(std::move(busIds)) {}

  const char* name() const override { return "p2p"; }
  // Device memory, same node, and this rank's device can address the
  // peer's (which must be visible to this process).
  bool canConnect(const RankInfo& self, const RankInfo& peer, Memory memory) const override;
  const char* slotPlace(Memory) const override { return "device"; }
  Result<std::unique_ptr<RecvConnection>> listen(const ConnectionSpec& spec,
                                                 ConnectionHandle* handle) override;
  Result<std::unique_ptr<SendConnection>> connect(const ConnectionSpec& spec,
                                                  const ConnectionHandle& handle) override;
  Status accept(const ConnectionSpec& spec, RecvConnection& connection) override;

 private:
  DeviceRuntime& runtime_;
  int device_;
  std::vector<std::string> busIds_;
};

}  // namespace tutti
