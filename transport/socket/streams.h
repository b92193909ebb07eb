// How many TCP streams one socket connection uses, and who drives them. One
// kernel TCP stream rarely fills a fast link (one core copies, one window
// limits), so NCCL stripes each chunk over several sockets, optionally driven
// by helper threads: TUTTI_NSOCKS_PERTHREAD sockets for each of
// TUTTI_SOCKET_NTHREADS threads (0 threads: the executor drives them inline).
// The socket transport reads them itself, and both ends of a connection
// check that they agree (transport/socket/transport.cpp).
#pragma once

#include "src/common/status.h"

namespace tutti {

constexpr int kMaxSocketStreams = 16;

struct SocketStreams {
  int socketsPerThread = 1;
  int threads = 0;
  int sockets() const { return socketsPerThread * (threads > 0 ? threads : 1); }

  static Result<SocketStreams> fromEnv();
};

}  // namespace tutti
