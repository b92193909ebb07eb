// How the ranks of a communicator agree on the rendezvous of the larger
// one they grow into (tuttiCommGrow): exactly one of them, the
// coordinator, holds it (tuttiCommGetUniqueId); an allgather over the
// parent's out-of-band channel hands it to the rest (every existing rank
// takes part in a grow, so nothing passes through a missing one).
#pragma once

#include "src/bootstrap/exchange.h"
#include "src/bootstrap/unique_id.h"

namespace tutti {

// `mine`: this rank's id, or nullptr where it has none. Fails, naming the
// ranks, unless exactly one rank passed an id.
Result<BootstrapHandle> agreeOnGrowRendezvous(Exchange& parent, const BootstrapHandle* mine);

}  // namespace tutti
