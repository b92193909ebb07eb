// GPU-to-GPU transport between ranks of one node whose devices can address
// each other (the same GPU, or peers over NVLink or PCIe). The receiver owns
// a ring of slots in its device memory; the sender's copies and reduction
// kernels write chunks straight into it (through CUDA IPC from another
// process, through the plain pointer and peer access within one), and the
// receiver reduces them where they lie. Slot counters live in a host
// shared-memory block, published only once the stream has passed the
// chunk's event, so the host thread never waits on the GPU.
#pragma once

#include <string>
#include <vector>

#include "src/device/device_runtime.h"
#include "transport/transport.h"

namespace tutti {

class P2pTransport final : public Transport {
 public:
  // `busIds[r]` is rank r's device (PCI bus id, empty for a host-only rank);
  // the connections' events are recorded on `stream`, where the executor's
  // device reductions run.
  P2pTransport(DeviceRuntime& runtime, DeviceStream stream, int device, std::vector<std::string> busIds)
      : runtime_(runtime), stream_(stream), device_(device), busIds_(std::move(busIds)) {}

  const char* name() const override { return "p2p"; }
  // Same node, and this rank's device can address the peer's (which must be
  // visible to this process).
  bool canConnect(const RankInfo& self, const RankInfo& peer) const override;
  Result<std::unique_ptr<RecvConnection>> listen(const ConnectionSpec& spec,
                                                 ConnectionHandle* handle) override;
  Result<std::unique_ptr<SendConnection>> connect(const ConnectionSpec& spec,
                                                  const ConnectionHandle& handle) override;
  Status accept(const ConnectionSpec& spec, RecvConnection& connection) override;

 private:
  Result<std::vector<DeviceEvent>> makeEvents(int n);

  DeviceRuntime& runtime_;
  DeviceStream stream_;
  int device_;
  std::vector<std::string> busIds_;
};

}  // namespace tutti
