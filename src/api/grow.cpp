// tuttiCommGetUniqueId and tuttiCommGrow: a communicator grows by ranks
// that join it (src/comm/membership/grow_agreement.h says how its ranks
// agree on the new rendezvous). The grown communicator is made by the same
// init as one made from scratch at that size.
#include <cstring>
#include <string>

#include "src/api/api_guard.h"
#include "src/comm/membership/grow_agreement.h"

using namespace tutti;

extern "C" tuttiResult_t tuttiCommGetUniqueId(tuttiComm_t comm, tuttiUniqueId* uniqueId) {
  const char* api = "tuttiCommGetUniqueId";
  if (!uniqueId) return report(comm, api, InvalidArgument("uniqueId is NULL"));
  return guardedCall(comm, api, [&](Communicator&) -> Status {
    TUTTI_ASSIGN_OR_RETURN(BootstrapHandle handle, makeRendezvous());
    std::memset(uniqueId, 0, sizeof(*uniqueId));
    std::memcpy(uniqueId->internal, &handle, sizeof(handle));
    return Status::Ok();
  });
}

extern "C" tuttiResult_t tuttiCommGrow(tuttiComm_t comm, int nRanks, const tuttiUniqueId* uniqueId, int rank,
                                       tuttiComm_t* newcomm, tuttiConfig_t* config) {
  const char* api = "tuttiCommGrow";
  if (!newcomm) return report(comm, api, InvalidArgument("newcomm (the output pointer) is NULL"));
  *newcomm = nullptr;
  BootstrapHandle id{};
  if (uniqueId) std::memcpy(&id, uniqueId->internal, sizeof(id));
  if (!comm) {
    // A rank that joins: its number among the new ones, and the coordinator's id.
    if (!uniqueId) return report(nullptr, api, InvalidArgument("a joining rank (comm NULL) needs the uniqueId"));
    if (rank < 0 || rank >= nRanks)
      return report(nullptr, api, InvalidArgument("rank " + std::to_string(rank) + " is not in [0, nRanks " +
                                                  std::to_string(nRanks) + ")"));
    return tuttiCommInitRankConfig(newcomm, nRanks, *uniqueId, rank, config);
  }
  return guardedCall(comm, api, [&](Communicator& parent) -> Status {
    if (comm->finalized.load()) return InvalidUsage("the communicator was finalized");
    if (rank != -1)
      return InvalidArgument("rank is " + std::to_string(rank) + ": an existing rank passes -1 and keeps its number");
    if (nRanks <= parent.size())
      return InvalidArgument("nRanks " + std::to_string(nRanks) + " is not more than the communicator's " +
                             std::to_string(parent.size()) + " ranks");
    TUTTI_ASSIGN_OR_RETURN(CommSettings settings, settingsFrom(config, comm->settings));
    settings.options.device = parent.device();
    comm->background.drain();  // after the parent's queued calls
    TUTTI_ASSIGN_OR_RETURN(BootstrapHandle handle,
                           agreeOnGrowRendezvous(parent.bootstrap(), uniqueId ? &id : nullptr));
    tuttiComm_t child = newHandle(settings);
    Status st = initInto(child, handle, nRanks, parent.rank());
    if (!st.ok()) {
      delete child;
      return st;
    }
    *newcomm = child;
    return Status::Ok();
  });
}
