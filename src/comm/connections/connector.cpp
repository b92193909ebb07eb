#include "src/comm/connections/connector.h"

#include <string>

#include "transport/stream_ordered.h"

namespace tutti {

void Connector::addRecv(const Endpoint& e, std::unique_ptr<RecvConnection>* slot) {
  for (const RecvJob& j : recvs_)
    if (j.slot == slot) return;
  recvs_.push_back({e, slot});
}

void Connector::addSend(const Endpoint& e, std::unique_ptr<SendConnection>* slot) {
  for (const SendJob& j : sends_)
    if (j.slot == slot) return;
  sends_.push_back({e, slot});
}

namespace {

// A device call's end of a connection: its slots mapped into the device,
// posted and released in the order of the device's stream.
template <typename Wrapper, typename End>
Status orderOnStream(const Connector::Endpoint& e, std::unique_ptr<End>* slot) {
  if (e.spec.memory != Memory::kDevice) return Status::Ok();
  DeviceScope scope(*e.runtime, e.spec.device);
  TUTTI_RETURN_IF_ERROR(scope.status());
  TUTTI_ASSIGN_OR_RETURN(auto mapped, DeviceSlots::map(*e.runtime, *e.deviceQueue, (*slot)->slots(), e.spec.nslots));
  *slot = std::make_unique<Wrapper>(std::move(*slot), std::move(mapped));
  return Status::Ok();
}

}  // namespace

static std::string describe(const ConnectionSpec& s, const char* dir) {
  return std::string(dir) + " rank " + std::to_string(s.peer->rank) + " (connection " +
         std::to_string(s.connectionId) + ")";
}

Status Connector::listenAll() {
  for (RecvJob& j : recvs_) {
    ConnectionHandle handle;
    auto conn = j.e.transport->listen(j.e.spec, &handle);
    if (!conn.ok()) return conn.status().withContext(j.e.transport->name() + std::string(" listen for ") + describe(j.e.spec, "receiving from"));
    *j.slot = std::move(conn.value());
    TUTTI_RETURN_IF_ERROR(j.e.exchange->send(j.e.spec.peer->rank, static_cast<int>(j.e.spec.connectionId),
                                             &handle, sizeof(handle)));
  }
  return Status::Ok();
}

Status Connector::connectAll() {
  for (SendJob& j : sends_) {
    ConnectionHandle handle;
    TUTTI_RETURN_IF_ERROR(j.e.exchange->recv(j.e.spec.peer->rank,
                                             static_cast<int>(j.e.spec.connectionId), &handle,
                                             sizeof(handle)));
    auto conn = j.e.transport->connect(j.e.spec, handle);
    if (!conn.ok()) return conn.status().withContext(j.e.transport->name() + std::string(" connect ") + describe(j.e.spec, "sending to"));
    *j.slot = std::move(conn.value());
    Status st = orderOnStream<StreamOrderedSend>(j.e, j.slot);
    if (!st.ok()) {
      j.slot->reset();
      return st.withContext(describe(j.e.spec, "sending to"));
    }
    if (j.e.tally) j.e.tally->add((*j.slot)->slots());
  }
  return Status::Ok();
}

Status Connector::acceptAll() {
  for (RecvJob& j : recvs_) {
    Status st = j.e.transport->accept(j.e.spec, **j.slot);
    if (st.ok()) st = orderOnStream<StreamOrderedRecv>(j.e, j.slot);
    if (!st.ok()) {
      j.slot->reset();
      return st.withContext(j.e.transport->name() + std::string(" accept ") + describe(j.e.spec, "receiving from"));
    }
    if (j.e.tally) j.e.tally->add((*j.slot)->slots());
  }
  recvs_.clear();
  sends_.clear();
  return Status::Ok();
}

Status Connector::run() {
  TUTTI_RETURN_IF_ERROR(listenAll());
  TUTTI_RETURN_IF_ERROR(connectAll());
  return acceptAll();
}

}  // namespace tutti
