// One UCP context and worker per communicator, with an endpoint per peer made
// from the worker addresses the ranks swap over the bootstrap. Every
// connection of the communicator shares it: each connection's progress()
// drives the worker, so the executor's loop is UCX's progress engine. UCX
// picks the fabric itself (UCX_TLS, UCX_NET_DEVICES).
#pragma once

#include <ucp/api/ucp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/common/status.h"

namespace tutti {

// Failure-aware endpoint to one peer: the error callback marks it failed.
struct UcxPeer {
  ucp_ep_h ep = nullptr;
  ucs_status_t failure = UCS_OK;  // set by UCX's error callback
  std::string name;
};

// Memory registered with the worker's context (ucp_mem_map), unmapped on destruction.
class UcxRegion {
 public:
  UcxRegion() = default;
  UcxRegion(ucp_context_h context, ucp_mem_h memh) : context_(context), memh_(memh) {}
  UcxRegion(UcxRegion&& o) noexcept { *this = std::move(o); }
  UcxRegion& operator=(UcxRegion&& o) noexcept;
  ~UcxRegion();
  ucp_mem_h handle() const { return memh_; }

 private:
  ucp_context_h context_ = nullptr;
  ucp_mem_h memh_ = nullptr;
};

class UcxWorker {
 public:
  // `chunkBytes`: the largest message tutti sends (a slot). Without RDMA
  // lanes such messages go eagerly: UCX's rendezvous adds a round trip per
  // chunk that cost 2-3x over TCP (unless UCX_RNDV_THRESH says otherwise).
  static Result<std::shared_ptr<UcxWorker>> create(size_t chunkBytes);
  ~UcxWorker();

  // This worker's address, to be swapped with every peer.
  const std::string& address() const { return address_; }
  // Peers' worker addresses by rank (this rank's own entry is ignored).
  void setPeerAddresses(std::vector<std::string> addresses) { peerAddresses_ = std::move(addresses); }
  // The endpoint to `rank`, made on first use.
  Result<UcxPeer*> peer(int rank, const std::string& name, bool sameHost);
  Result<UcxRegion> registerMemory(void* data, size_t bytes);

  ucp_worker_h worker() const { return worker_; }
  // Every UCP call on this worker holds this lock: the communicator's calls
  // come from one thread, but abort notices may come from another.
  std::mutex& lock() { return lock_; }
  // Drives the worker until it has nothing more to do right now (lock held).
  void progressLocked() {
    while (ucp_worker_progress(worker_) != 0) {
    }
  }
  // Every transport/device pair UCT offers here ("tcp/eth0"), before UCX_TLS narrows it.
  static std::vector<std::string> fabricResources();
  // Whether any of them is an RDMA transport (reliable or dynamic connections, datagrams).
  static bool hasRdma(const std::vector<std::string>& resources);
  // UCX's version and fabricResources(), for logs and tutti-info.
  static std::string describe();

 private:
  UcxWorker() = default;
  static std::vector<std::string> queryFabricResources();
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
  std::vector<std::string> peerAddresses_;
  std::map<int, std::unique_ptr<UcxPeer>> peers_;
  std::mutex lock_;
};

// A UCX status as a tutti error saying what was being done.
Status ucxError(const std::string& what, ucs_status_t status);

}  // namespace tutti
