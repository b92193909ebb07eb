// Changing who is in a group: shrink (PyTorch's shrink_group calls it), the
// ranks tutti named as failed (whom to exclude), and grow, for which PyTorch
// has no call (tutti_torch.grow and tutti_torch.join_grown build the
// ProcessGroup around it).
#include <c10/util/Exception.h>

#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>

#include "process_group_tutti.h"
#include "unique_id_store.h"

namespace tutti_torch {

#if TUTTI_TORCH_AT_LEAST(2, 8)
c10::intrusive_ptr<c10d::Backend> ProcessGroupTutti::shrink(const std::vector<int64_t>& ranksToExclude,
                                                            int shrinkFlags,
                                                            const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  ensureOpen("shrink");
  const std::vector<int> excluded(ranksToExclude.begin(), ranksToExclude.end());
  // Without SHRINK_ABORT the calls issued so far end first; with it they
  // fail (the shrink revokes the communicator), and so the drain ends too.
  tuttiComm_t child = nullptr;
  {
    std::optional<pybind11::gil_scoped_release> withoutGil;
    if (Py_IsInitialized() && PyGILState_Check()) withoutGil.emplace();
    if (!(shrinkFlags & TUTTI_SHRINK_ABORT)) queue_->drain();
    check(tuttiCommShrink(comm_, excluded.data(), static_cast<int>(excluded.size()), &child, nullptr, shrinkFlags),
          "tuttiCommShrink");
    if (shrinkFlags & TUTTI_SHRINK_ABORT) queue_->drain();
  }
  int rank = 0, size = 0;
  tuttiCommUserRank(child, &rank);
  tuttiCommCount(child, &size);
  return c10::make_intrusive<ProcessGroupTutti>(child, store_, rank, size, opts ? opts->timeout : timeout_);
}

std::vector<int> ProcessGroupTutti::failedRanks() {
  int count = 0;
  check(tuttiCommFailedRanks(comm_, nullptr, 0, &count), "tuttiCommFailedRanks");
  std::vector<int> ranks(count);
  check(tuttiCommFailedRanks(comm_, ranks.data(), count, &count), "tuttiCommFailedRanks");
  ranks.resize(std::min<size_t>(ranks.size(), count));
  return ranks;
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupTutti::grow(int newSize, const c10::intrusive_ptr<c10d::Store>& store,
                                                          const std::string& key) {
  ensureOpen("grow");
  TORCH_CHECK(newSize > getSize(), "tutti backend, rank ", getRank(), ": grow to ", newSize,
              " ranks: the group has ", getSize(), " already");
  tuttiComm_t child = nullptr;
  {
    std::optional<pybind11::gil_scoped_release> withoutGil;
    if (Py_IsInitialized() && PyGILState_Check()) withoutGil.emplace();
    queue_->drain();  // after every call issued so far, from this thread
    tuttiUniqueId id;
    const bool coordinator = getRank() == 0;
    if (coordinator) {
      check(tuttiCommGetUniqueId(comm_, &id), "grow (tuttiCommGetUniqueId)");
      publishUniqueId(*store, key, id);
    }
    tuttiConfig_t config = configFor(timeout_);
    check(tuttiCommGrow(comm_, newSize, coordinator ? &id : nullptr, -1, &child, &config), "grow (tuttiCommGrow)");
  }
  return c10::make_intrusive<ProcessGroupTutti>(child, store_, getRank(), newSize, timeout_);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupTutti::joinGrown(const c10::intrusive_ptr<c10d::Store>& store,
                                                               const std::string& key, int rank, int newSize,
                                                               std::chrono::milliseconds timeout) {
  TORCH_CHECK(rank > 0 && rank < newSize, "tutti backend: a process joining a grow takes a rank of 1 .. ",
              newSize - 1, ", not ", rank);
  tuttiComm_t child = nullptr;
  {
    std::optional<pybind11::gil_scoped_release> withoutGil;
    if (Py_IsInitialized() && PyGILState_Check()) withoutGil.emplace();
    const tuttiUniqueId id = awaitUniqueId(*store, key);
    tuttiConfig_t config = configFor(timeout);
    if (tuttiCommGrow(nullptr, newSize, &id, rank, &child, &config) != tuttiSuccess)
      throw std::runtime_error("tutti backend, rank " + std::to_string(rank) + ": joining a grow to " +
                               std::to_string(newSize) + " ranks (tuttiCommGrow): " + tuttiGetLastError(nullptr));
  }
  return c10::make_intrusive<ProcessGroupTutti>(child, store, rank, newSize, timeout);
}
#endif

}  // namespace tutti_torch
