// The rendezvous root: a thread that collects every rank's RankInfo and sends
// the full table back, then exits. Started by tuttiGetUniqueId (or by rank 0
// under tuttiCommInitFromEnv).
#pragma once

#include "src/bootstrap/unique_id.h"
#include "src/common/socket.h"

namespace tutti {

// Binds a listener at `address` (port 0 picks one) and starts the root thread;
// returns the handle ranks need to find it.
Result<BootstrapHandle> startRoot(const SocketAddress& address, uint64_t magic,
                                  double timeoutSeconds);

// The most ranks a communicator may have: the root's answer (a RankInfo
// each) must fit its 32-bit length.
constexpr int kMaxRanks = 1 << 22;
// The longest refusal a rank accepts from the root.
constexpr int kMaxRootErrorBytes = 4096;

// Wire format of the rendezvous, shared by root and ranks.
struct RootHello {
  uint64_t magic;
  RankInfo info;
};
struct RootReplyHeader {
  int32_t error;        // 0: the table follows; else a message of `length` bytes
  int32_t length;
};

}  // namespace tutti
