#include "src/comm/connections/connections.h"

#include <algorithm>

#include "src/common/log.h"

namespace tutti {

Status Connections::init(std::vector<std::unique_ptr<Transport>> transports,
                         const ConnectionSettings& settings, SocketBootstrap& bootstrap) {
  settings_ = settings;
  bootstrap_ = &bootstrap;
  transports_ = std::move(transports);
  const auto& peers = bootstrap.peers();
  const int nranks = static_cast<int>(peers.size());
  const int rank = bootstrap.rank();
  table_.reset(nranks);
  // A transport's place in the list, the same on every rank (the list's
  // makeup is checked alike at init); a missing one is past the end.
  auto pick = [&](Memory m, int p) {
    for (size_t i = 0; i < transports_.size(); ++i)
      if (transports_[i]->canConnect(peers[rank], peers[p], m)) return static_cast<uint8_t>(i);
    return static_cast<uint8_t>(255);
  };
  for (Memory m : {Memory::kHost, Memory::kDevice}) {
    auto& chosen = chosen_[static_cast<int>(m)];
    chosen.assign(nranks, nullptr);
    if (m == Memory::kDevice && settings.device < 0) continue;
    std::vector<uint8_t> mine(nranks, 255);
    for (int p = 0; p < nranks; ++p) mine[p] = pick(m, p);  // itself too: a send to self
    std::vector<uint8_t> all;
    if (m == Memory::kDevice) {  // host choices are symmetric: same host, same lists
      all.assign(static_cast<size_t>(nranks) * nranks, 0);
      std::copy(mine.begin(), mine.end(), all.begin() + static_cast<long>(rank) * nranks);
      TUTTI_RETURN_IF_ERROR(bootstrap.allgather(all.data(), nranks));
    }
    for (int p = 0; p < nranks; ++p) {
      uint8_t index = mine[p];
      if (!all.empty()) index = std::max(index, all[static_cast<size_t>(p) * nranks + rank]);
      if (index >= transports_.size())
        return InvalidUsage("no transport can carry " + std::string(memoryName(m)) + " buffers to " +
                            bootstrap.describePeer(p) + (m == Memory::kDevice ? " (is it host-only?)" : ""));
      chosen[p] = transports_[index].get();
      if (p != rank)
        TUTTI_INFO(kSubsysInit, "rank %d -> %s: %s calls over %s", rank, bootstrap.describePeer(p).c_str(),
                 memoryName(m), route(m, p).c_str());
    }
  }
  return Status::Ok();
}

std::string Connections::route(Memory m, int peer) const {
  Transport* t = transportFor(m, peer);
  if (!t) return "none";
  return std::string(t->name()) + "/" + t->slotPlace(m);
}

ConnectionSpec Connections::specFor(Memory m, int channel, int peer, int sender) const {
  const auto& peers = bootstrap_->peers();
  ConnectionSpec spec;
  spec.self = &peers[bootstrap_->rank()];
  spec.peer = &peers[peer];
  spec.commMagic = settings_.magic;
  spec.connectionId = ConnectionTable::connectionId(m, channel, sender);
  spec.slotBytes = m == Memory::kDevice ? settings_.deviceSlotBytes : settings_.hostSlotBytes;
  spec.nslots = settings_.nslots;
  if (channel == kOneShotChannel) {  // by the kind of link, as plans cut their chunks
    const bool hostMate = spec.peer->hostHash == spec.self->hostHash;
    const OneShotSlots slots = oneShotSlotsOf(hostMate ? OneShotLink::kInsideNode : OneShotLink::kAcrossNodes);
    spec.slotBytes = slots.slotBytes;
    spec.nslots = slots.count;
  }
  spec.timeoutSeconds = settings_.timeoutSeconds;
  spec.abort = settings_.abort;
  spec.nic = channel < 0 ? 0 : channel % settings_.nics;  // channels listen on the node's NICs in turn
  spec.memory = m;
  spec.device = settings_.device;
  return spec;
}

bool Connections::request(const Plan& plan, Memory m, Connector* connector) {
  const int rank = bootstrap_->rank();
  DeviceRuntime* runtime = m == Memory::kDevice ? &deviceRuntime() : nullptr;
  auto endpoint = [&](int channel, int peer, int sender) {
    return Connector::Endpoint{transportFor(m, peer), bootstrap_, specFor(m, channel, peer, sender), runtime,
                               settings_.deviceQueue, &table_.tally()};
  };
  bool any = false;
  for (const ChannelProgram& p : plan.channels)
    for (const Step& s : p.steps) {
      if (s.sendPeer >= 0 && !table_.send(m, p.channel, s.sendPeer)) {
        connector->addSend(endpoint(p.channel, s.sendPeer, rank), table_.sendSlot(m, p.channel, s.sendPeer));
        any = true;
      }
      forEachRecvPeer(s, rank, [&](int peer) {
        if (table_.recv(m, p.channel, peer)) return;
        connector->addRecv(endpoint(p.channel, peer, peer), table_.recvSlot(m, p.channel, peer));
        any = true;
      });
    }
  return any;
}

}  // namespace tutti
