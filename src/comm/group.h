// Group semantics: between tuttiGroupStart and tuttiGroupEnd (per thread,
// nestable) calls are queued; the outermost end connects what send/recv
// needs, on every communicator at once, and runs everything together. Outside
// a group a call is a group of one.
#pragma once

#include "src/comm/communicator.h"

namespace tutti {

void groupStart();
// Runs the queued calls when the outermost group ends. `failedComms` receives
// the communicators whose calls failed (to record the error on).
Status groupEnd(std::vector<Communicator*>* failedComms);
bool groupActive();

// Queues the call in the open group, or runs it now.
Status submit(Communicator* comm, const CollectiveArgs& args);

}  // namespace tutti
