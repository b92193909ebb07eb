#include "transport/ucx/transport.h"

#include <cstring>

#include "src/common/host_buffer.h"
#include "src/common/interfaces.h"
#include "transport/ucx/connection.h"
#include "transport/ucx/worker.h"

namespace tutti {

namespace {

// The receiver's handle only confirms the shape: the tag carries the rest.
struct UcxHandle {
  char kind[4];  // "ucx"
  uint32_t connectionId;
  uint64_t slotBytes;
  int32_t nslots;
};
static_assert(sizeof(UcxHandle) <= sizeof(ConnectionHandle), "handle too large");

int sameHostPid(const ConnectionSpec& spec) {
  return spec.peer->hostHash == spec.self->hostHash ? spec.peer->pid : 0;
}

// Registered slots and the link to the peer: what both ends start from.
struct Ends {
  std::unique_ptr<UcxLink> link;
  HostBuffer slots;
  UcxRegion region;
};

Result<Ends> makeEnds(const std::shared_ptr<UcxWorker>& worker, const ConnectionSpec& spec, bool receiver) {
  Ends e;
  std::lock_guard<std::mutex> guard(worker->lock());
  TUTTI_ASSIGN_OR_RETURN(UcxPeer * peer, worker->peer(spec.peer->rank, peerName(spec), sameHostPid(spec) > 0));
  TUTTI_ASSIGN_OR_RETURN(e.slots, HostBuffer::allocate(spec.slotBytes * spec.nslots));
  TUTTI_ASSIGN_OR_RETURN(e.region, worker->registerMemory(e.slots.data(), e.slots.size()));
  e.link = std::make_unique<UcxLink>(worker, peer, spec.connectionId, receiver, spec.self->rank,
                                     spec.peer->rank, sameHostPid(spec));
  return e;
}

}  // namespace

Result<std::unique_ptr<UcxTransport>> UcxTransport::createUnconnected(size_t chunkBytes) {
  std::unique_ptr<UcxTransport> t(new UcxTransport());
  TUTTI_ASSIGN_OR_RETURN(t->worker_, UcxWorker::create(chunkBytes));
  return t;
}

Result<std::unique_ptr<UcxTransport>> UcxTransport::create(const AllgatherBlobs& swap, size_t chunkBytes) {
  TUTTI_ASSIGN_OR_RETURN(auto t, createUnconnected(chunkBytes));
  auto all = swap(t->workerAddress());
  if (!all.ok()) return all.status().withContext("UCX: swapping worker addresses");
  t->setPeerAddresses(std::move(all.value()));
  return t;
}

const std::string& UcxTransport::workerAddress() const { return worker_->address(); }

void UcxTransport::setPeerAddresses(std::vector<std::string> addresses) {
  worker_->setPeerAddresses(std::move(addresses));
}

Result<std::unique_ptr<RecvConnection>> UcxTransport::listen(const ConnectionSpec& spec,
                                                             ConnectionHandle* handle) {
  UcxHandle h{{'u', 'c', 'x', 0}, spec.connectionId, spec.slotBytes, spec.nslots};
  std::memcpy(handle->bytes, &h, sizeof(h));
  TUTTI_ASSIGN_OR_RETURN(Ends e, makeEnds(worker_, spec, true));
  auto conn = std::make_unique<UcxRecvConnection>(
      UcxRing(std::move(e.link), std::move(e.slots), std::move(e.region), spec.slotBytes, spec.nslots));
  TUTTI_RETURN_IF_ERROR(conn->start());
  return std::unique_ptr<RecvConnection>(std::move(conn));
}

Result<std::unique_ptr<SendConnection>> UcxTransport::connect(const ConnectionSpec& spec,
                                                              const ConnectionHandle& handle) {
  UcxHandle h;
  std::memcpy(&h, handle.bytes, sizeof(h));
  if (std::memcmp(h.kind, "ucx", 4) != 0)
    return InvalidUsage(peerName(spec) + " does not use the UCX transport (TUTTI_NET must match on every rank)");
  if (h.connectionId != spec.connectionId || h.slotBytes != spec.slotBytes || h.nslots != spec.nslots)
    return InvalidUsage(peerName(spec) + " expects another connection or slot layout");
  TUTTI_ASSIGN_OR_RETURN(Ends e, makeEnds(worker_, spec, false));
  UcxLink* link = e.link.get();
  auto conn = std::make_unique<UcxSendConnection>(
      UcxRing(std::move(e.link), std::move(e.slots), std::move(e.region), spec.slotBytes, spec.nslots));
  TUTTI_RETURN_IF_ERROR(link->armNotice());
  return std::unique_ptr<SendConnection>(std::move(conn));
}

Status UcxTransport::accept(const ConnectionSpec&, RecvConnection&) {
  // Nothing to wait for: the receives are posted, UCX wires the endpoints up
  // as the first messages flow.
  return Status::Ok();
}

// rc, dc and ud ride on verbs devices: without one, UCX need not open its
// memory domains to say no.
bool UcxTransport::hasRdmaLanes() { return anyVerbsDevice() && UcxWorker::hasRdma(UcxWorker::fabricResources()); }

Status UcxTransport::probe(std::string* description, bool* rdma) {
  auto w = UcxWorker::create(0);
  if (!w.ok()) return w.status();
  *description = UcxWorker::describe();
  *rdma = hasRdmaLanes();
  return Status::Ok();
}

}  // namespace tutti
