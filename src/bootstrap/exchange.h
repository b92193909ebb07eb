// The out-of-band channel between the ranks of a communicator: what
// transports use to swap connection handles. Small messages, not data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/common/status.h"

namespace tutti {

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Messages between a pair with the same tag arrive in the order sent.
  virtual Status send(int peer, int tag, const void* data, size_t bytes) = 0;
  virtual Status recv(int peer, int tag, void* data, size_t bytes) = 0;
  // data holds size() slots of `bytes` each; this rank's slot is filled in.
  virtual Status allgather(void* data, size_t bytes) = 0;
  virtual Status barrier() = 0;
};

// Rank 0's `bytes` at `data` to every rank, down a binomial tree of sends
// under `tag` (log2 of the ranks rounds; each rank gets the bytes once).
Status broadcastFromRank0(Exchange& e, int tag, void* data, size_t bytes);

}  // namespace tutti
