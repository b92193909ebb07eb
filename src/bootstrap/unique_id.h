// The 128-byte unique id: the root's address and a random magic that every
// bootstrap connection must present.
#pragma once

#include <cstdint>
#include <string>

#include "src/bootstrap/rank_info.h"
#include "src/common/socket.h"

namespace tutti {

struct BootstrapHandle {
  uint64_t magic = 0;
  WireAddress root;
};
static_assert(sizeof(BootstrapHandle) <= 128, "must fit the unique id");

WireAddress toWire(const SocketAddress& a);
SocketAddress fromWire(const WireAddress& w);
uint64_t randomMagic();

// Deterministic handle for a known root address (TUTTI_COMM_ID, MASTER_ADDR):
// every rank derives the same magic from the same string.
BootstrapHandle handleForAddress(const SocketAddress& root, const std::string& seed);

}  // namespace tutti
