// tuttiCommShrink: the ranks not excluded form a new communicator
// (src/comm/membership/shrink_agreement.h says how they agree on it).
#include <set>
#include <string>

#include "src/api/api_guard.h"
#include "src/comm/membership/shrink_agreement.h"

using namespace tutti;

namespace {

constexpr int kKnownFlags = TUTTI_SHRINK_ABORT | TUTTI_SHRINK_EXCLUDE_FAILED;

Result<std::set<int>> excludedRanks(Communicator& c, const int* list, int count, int flags) {
  std::set<int> excluded;
  for (int i = 0; i < count; ++i) {
    if (list[i] < 0 || list[i] >= c.size())
      return InvalidArgument("excludeRanks[" + std::to_string(i) + "] is " + std::to_string(list[i]) +
                             ", not a rank of this communicator of " + std::to_string(c.size()));
    excluded.insert(list[i]);
  }
  if (flags & TUTTI_SHRINK_EXCLUDE_FAILED)
    for (int r : c.failedRanks()) excluded.insert(r);
  return excluded;
}

}  // namespace

extern "C" tuttiResult_t tuttiCommShrink(tuttiComm_t comm, const int* excludeRanks, int excludeCount,
                                         tuttiComm_t* newcomm, tuttiConfig_t* config, int shrinkFlags) {
  const char* api = "tuttiCommShrink";
  if (!newcomm) return report(comm, api, InvalidArgument("newcomm (the output pointer) is NULL"));
  *newcomm = nullptr;
  if (excludeCount < 0 || (excludeCount > 0 && !excludeRanks))
    return report(comm, api, InvalidArgument("excludeRanks is NULL or excludeCount (" +
                                             std::to_string(excludeCount) + ") is negative"));
  if (shrinkFlags & ~kKnownFlags)
    return report(comm, api, InvalidArgument("shrinkFlags " + std::to_string(shrinkFlags) +
                                             " has bits beyond TUTTI_SHRINK_ABORT and TUTTI_SHRINK_EXCLUDE_FAILED"));
  // A revoked parent still shrinks: that is what revoking is for.
  return guardedCall(comm, api, [&](Communicator& parent) -> Status {
    if (comm->finalized.load()) return InvalidUsage("the communicator was finalized");
    TUTTI_ASSIGN_OR_RETURN(CommSettings settings, settingsFrom(config, comm->settings));
    settings.options.device = parent.device();
    TUTTI_ASSIGN_OR_RETURN(std::set<int> excluded, excludedRanks(parent, excludeRanks, excludeCount, shrinkFlags));
    if (shrinkFlags & TUTTI_SHRINK_ABORT) {
      // This call counts as inside; stopCalls waits for the others.
      parent.activeCalls().fetch_sub(1);
      const bool stopped = stopCalls(parent);
      parent.activeCalls().fetch_add(1);
      if (!stopped) return InternalError("a call on the communicator was still inside after the timeout");
    } else if (parent.abortFlag().load() == false) {
      // Calls queued on a non-blocking parent finish before the shrink.
      comm->background.drain();
    }
    TUTTI_ASSIGN_OR_RETURN(NewMembership place,
                           agreeOnSurvivors(parent.membershipChannel(), excluded, parent.nextShrinkRound(),
                                            makeRendezvous));
    // Made on the caller's thread, whatever the blocking setting: the call
    // returns once the shrunk communicator is ready.
    tuttiComm_t child = newHandle(settings);
    Status st = initInto(child, place.handle, place.nranks, place.rank);
    if (!st.ok()) {
      delete child;
      return st;
    }
    *newcomm = child;
    return Status::Ok();
  }, AfterAbort::kAnswer);
}

extern "C" tuttiResult_t tuttiCommFailedRanks(tuttiComm_t comm, int* ranks, int capacity, int* count) {
  const char* api = "tuttiCommFailedRanks";
  if (!count || capacity < 0 || (capacity > 0 && !ranks))
    return report(comm, api, InvalidArgument("count is NULL, or ranks is NULL with a capacity, or capacity is negative"));
  return guardedCall(comm, api, [&](Communicator& c) {
    const std::set<int> failed = c.failedRanks();
    *count = static_cast<int>(failed.size());
    int i = 0;
    for (int r : failed)
      if (i < capacity) ranks[i++] = r;
    return Status::Ok();
  }, AfterAbort::kAnswer);
}
