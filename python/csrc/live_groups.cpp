#include "live_groups.h"

#include <pybind11/pybind11.h>

#include <mutex>
#include <set>

#include "process_group_tutti.h"

namespace tutti_torch::live_groups {
namespace {

std::mutex mutex;
std::set<ProcessGroupTutti*>& groups() {
  static auto* live = new std::set<ProcessGroupTutti*>;  // never freed: groups may outlive static destructors
  return *live;
}

}  // namespace

void add(ProcessGroupTutti* group) {
  std::lock_guard<std::mutex> lock(mutex);
  groups().insert(group);
}

void remove(ProcessGroupTutti* group) {
  std::lock_guard<std::mutex> lock(mutex);
  groups().erase(group);
}

void quiesceAll() {
  pybind11::gil_scoped_release withoutGil;
  // Held throughout: a group cannot be destroyed while it is drained.
  std::lock_guard<std::mutex> lock(mutex);
  for (ProcessGroupTutti* group : groups()) group->quiesce();
}

}  // namespace tutti_torch::live_groups
