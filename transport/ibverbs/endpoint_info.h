// What the two ends of a verbs connection tell each other. The receiver's
// half travels in the ConnectionHandle (over the bootstrap): where its
// handshake listener is, its queue pairs, and its slot ring's address and
// key. The sender answers over that TCP socket with its queue pairs and the
// address of the word the receiver writes credits (and failure notices) to.
#pragma once

#include <cstdint>
#include <string>

#include "src/bootstrap/rank_info.h"
#include "src/common/status.h"
#include "transport/transport.h"

namespace tutti {

constexpr int kMaxIbQps = 8;
constexpr uint8_t kIbInfoVersion = 1;

struct IbEndpointInfo {
  uint8_t version = kIbInfoVersion;
  uint8_t nqps = 0;
  uint8_t ethernet = 0;   // RoCE: address by GID
  uint8_t mtu = 0;        // ibv_mtu
  uint16_t lid = 0;
  uint16_t reserved = 0;
  uint32_t qpn[kMaxIbQps] = {};
  uint32_t psn = 0;
  uint8_t gid[16] = {};
  uint64_t address = 0;   // receiver: its slot ring; sender: its credit words
  uint32_t rkey = 0;
  uint32_t slotBytes = 0;
  uint32_t nslots = 0;
};

// The receiver's handle: handshake address and connection, then its info.
struct IbHandle {
  char kind[4] = {'i', 'b', 0, 0};
  uint32_t connectionId = 0;
  uint64_t magic = 0;
  WireAddress listener;
  IbEndpointInfo info;
};
static_assert(sizeof(IbHandle) <= sizeof(ConnectionHandle), "verbs handle does not fit");

void encodeIbHandle(const IbHandle& h, ConnectionHandle* out);
// Checks everything a peer could get wrong or a stray handle could hold.
Result<IbHandle> decodeIbHandle(const ConnectionHandle& in);
Status validateIbInfo(const IbEndpointInfo& info, const std::string& from);

}  // namespace tutti
