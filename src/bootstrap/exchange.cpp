#include "src/bootstrap/exchange.h"

namespace tutti {

Status broadcastFromRank0(Exchange& e, int tag, void* data, size_t bytes) {
  const int n = e.size(), r = e.rank();
  // Round by round, the ranks below `have` hold the bytes and pass them up.
  for (int have = 1; have < n; have *= 2) {
    if (r < have && r + have < n) TUTTI_RETURN_IF_ERROR(e.send(r + have, tag, data, bytes));
    else if (r >= have && r < 2 * have) TUTTI_RETURN_IF_ERROR(e.recv(r - have, tag, data, bytes));
  }
  return Status::Ok();
}

}  // namespace tutti
