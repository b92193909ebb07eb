// Shared-memory transport between ranks of one host: the receiver owns a
// segment holding the slot ring; the sender writes chunks straight into it and
// the receiver reduces them where they lie.
#pragma once

#include "transport/transport.h"

namespace tutti {

class ShmTransport final : public Transport {
 public:
  const char* name() const override { return "shm"; }
  bool canConnect(const RankInfo& self, const RankInfo& peer, Memory memory) const override;
  Result<std::unique_ptr<RecvConnection>> listen(const ConnectionSpec& spec,
                                                 ConnectionHandle* handle) override;
  Result<std::unique_ptr<SendConnection>> connect(const ConnectionSpec& spec,
                                                  const ConnectionHandle& handle) override;
  Status accept(const ConnectionSpec& spec, RecvConnection& connection) override;
};

}  // namespace tutti
