// UCX transport (TUTTI_NET=ucx): UCX chooses the fabric (RDMA verbs where
// there is one, TCP or shared memory where not; UCX_TLS and UCX_NET_DEVICES
// narrow it). The communicator's ranks swap worker addresses over the
// bootstrap once; each connection is then a pair of tagged-message ends on
// the one worker.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace tutti {

class UcxWorker;

class UcxTransport final : public Transport {
 public:
  // `chunkBytes`: the largest chunk a connection carries (one slot).
  static Result<std::unique_ptr<UcxTransport>> create(const AllgatherBlobs& swap, size_t chunkBytes);
  // Two steps for callers that swap addresses themselves (tests): create the
  // worker, then hand it every rank's address.
  static Result<std::unique_ptr<UcxTransport>> createUnconnected(size_t chunkBytes);
  const std::string& workerAddress() const;
  void setPeerAddresses(std::vector<std::string> addresses);

  const char* name() const override { return "ucx"; }
  // Any pair; device calls through slots mapped into the device.
  bool canConnect(const RankInfo&, const RankInfo&, Memory) const override { return true; }
  Result<std::unique_ptr<RecvConnection>> listen(const ConnectionSpec& spec,
                                                 ConnectionHandle* handle) override;
  Result<std::unique_ptr<SendConnection>> connect(const ConnectionSpec& spec,
                                                  const ConnectionHandle& handle) override;
  Status accept(const ConnectionSpec& spec, RecvConnection& connection) override;

  // "UCX 1.13.1 (tcp/lo, posix/memory, ...)" and whether it has RDMA lanes,
  // or why UCX cannot run here.
  static Status probe(std::string* description, bool* rdma);
  // Whether UCX has an RDMA transport here, without making a context.
  static bool hasRdmaLanes();

 private:
  UcxTransport() = default;
  std::shared_ptr<UcxWorker> worker_;
};

}  // namespace tutti
