// Group semantics: between tuttiGroupStart and tuttiGroupEnd (per thread,
// nestable) calls are queued; the outermost end connects what send/recv
// needs, on every communicator at once, and runs everything together. Outside
// a group a call is a group of one.
#pragma once

#include <deque>
#include <memory>

#include "src/comm/communicator.h"

namespace tutti {

struct QueuedCall {
  Communicator* comm;
  CollectiveArgs args;
  Plan plan;
};
using GroupCalls = std::deque<QueuedCall>;  // deque: plans keep their address

void groupStart();
// Closes one level; at the outermost it hands over the queued calls (null
// inside a nested group), which the caller runs with runGroup.
Result<std::shared_ptr<GroupCalls>> groupEnd();
// Runs calls together. `failedComms` receives the communicators whose calls
// failed (to record the error on).
Status runGroup(GroupCalls& calls, std::vector<Communicator*>* failedComms);
// The calling thread's open groups, nested (inline: every call asks).
extern thread_local int tGroupDepth;
inline bool groupActive() { return tGroupDepth > 0; }

// Connects what the plans need and is not connected yet, across all
// communicators: each phase runs on every communicator before the next
// phase starts, so ranks sharing a thread cannot wait on each other.
struct PlanToConnect {
  Communicator* comm;
  const Plan* plan;
  Memory memory;  // the calls' buffers: host or device connections
};
Status connectPlans(const std::vector<PlanToConnect>& plans);

// Runs one call now, outside any group: on the host block when it takes
// the call (inline, so a small call goes there straight), else by a plan.
Status runPlanned(Communicator* comm, const CollectiveArgs& args);
inline Status runNow(Communicator* comm, const CollectiveArgs& args) {
  return comm->onHostBlock(args) ? comm->runOnHostBlock(args) : runPlanned(comm, args);
}
// Queues the call in the open group, or runs it now.
Status submit(Communicator* comm, const CollectiveArgs& args);

}  // namespace tutti
