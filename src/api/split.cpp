// tuttiCommSplit: ranks of a communicator that give the same color form a new
// one. Two exchanges over the parent's bootstrap: everybody's (color, key),
// then each color's leader's rendezvous handle.
#include <algorithm>
#include <cstring>
#include <vector>

#include "src/api/api_guard.h"

using namespace tutti;

namespace {

struct SplitEntry {
  int32_t color;
  int32_t key;
};

// Where this rank lands: its new rank and size (0 for no color) and the
// rendezvous every member dials.
struct SplitPlace {
  int nranks = 0;
  int rank = -1;
  BootstrapHandle handle{};
};

Result<SplitPlace> placeInSplit(Communicator& parent, int color, int key) {
  Exchange& ex = parent.bootstrap();
  std::vector<SplitEntry> entries(parent.size());
  entries[parent.rank()] = {color, key};
  TUTTI_RETURN_IF_ERROR(ex.allgather(entries.data(), sizeof(SplitEntry)));
  std::vector<int> members;
  for (int r = 0; r < parent.size(); ++r)
    if (color != TUTTI_SPLIT_NOCOLOR && entries[r].color == color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return entries[a].key < entries[b].key; });
  SplitPlace place;
  std::vector<BootstrapHandle> handles(parent.size());
  bool leader = !members.empty() && members.front() == parent.rank();
  if (leader) {
    // The leader hosts the new communicator's rendezvous, as tuttiGetUniqueId would.
    auto made = makeRendezvous();
    // Every rank must still take part in the exchange below, or the others hang.
    if (made.ok()) handles[parent.rank()] = made.value();
  }
  TUTTI_RETURN_IF_ERROR(ex.allgather(handles.data(), sizeof(BootstrapHandle)));
  if (members.empty()) return place;
  place.nranks = static_cast<int>(members.size());
  place.rank = static_cast<int>(std::find(members.begin(), members.end(), parent.rank()) -
                                members.begin());
  place.handle = handles[members.front()];
  if (place.handle.magic == 0)
    return SystemError("rank " + std::to_string(members.front()) + ", the leader of color " +
                       std::to_string(color) + ", could not start the new communicator's rendezvous");
  return place;
}

Status splitInto(Communicator& parent, int color, int key, tuttiComm_t child) {
  TUTTI_ASSIGN_OR_RETURN(SplitPlace place, placeInSplit(parent, color, key));
  if (place.nranks == 0) return Status::Ok();
  return initInto(child, place.handle, place.nranks, place.rank);
}

}  // namespace

extern "C" tuttiResult_t tuttiCommSplit(tuttiComm_t comm, int color, int key,
                                        tuttiComm_t* newcomm, tuttiConfig_t* config) {
  const char* api = "tuttiCommSplit";
  if (!newcomm) return report(comm, api, InvalidArgument("newcomm (the output pointer) is NULL"));
  *newcomm = nullptr;
  return guardedCall(comm, api, [&](Communicator& parent) -> Status {
    if (comm->finalized.load()) return InvalidUsage("the communicator was finalized");
    if (color < 0 && color != TUTTI_SPLIT_NOCOLOR)
      return InvalidArgument("color " + std::to_string(color) +
                             " is negative and not TUTTI_SPLIT_NOCOLOR");
    TUTTI_ASSIGN_OR_RETURN(CommSettings settings, settingsFrom(config, comm->settings));
    settings.options.device = parent.device();
    tuttiComm_t child = color == TUTTI_SPLIT_NOCOLOR ? nullptr : newHandle(settings);
    if (!comm->settings.blocking) {
      // After the parent's earlier calls; the child reports progress too.
      if (child) child->background.hold();
      runInBackground(comm, api, [&parent, color, key, child] {
        Status st = splitInto(parent, color, key, child);
        if (child) {
          keepInitFailure(child, st);
          child->background.settle();
        }
        return st;
      });
      *newcomm = child;
      return inProgress();
    }
    Status st = splitInto(parent, color, key, child);
    if (!st.ok()) {
      delete child;
      return st;
    }
    *newcomm = child;
    return Status::Ok();
  });
}
