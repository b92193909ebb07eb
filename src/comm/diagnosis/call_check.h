// TUTTI_CHECK_CALLS=1: before a host-buffer collective runs, the ranks
// all-gather what each is about to call (kind, count, dtype, op, root) and
// every rank fails with InvalidUsage naming both calls when they differ. It
// catches what a blocked call's check cannot: calls that differ and still
// complete (another op, another root). Sends and receives pair different
// calls by design and are not compared.
#pragma once

#include "src/comm/communicator.h"

namespace tutti {

Status checkSameCall(Communicator* comm, const CollectiveArgs& args);

}  // namespace tutti
