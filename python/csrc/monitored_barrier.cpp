// monitoredBarrier, over the group's store rather than the communicator, as
// a rank that never arrives must not break the group for the others: each
// rank posts its arrival; rank 0 waits for them until the timeout and names
// who did not come (the first, or all with waitAllRanks), then releases
// everyone. The messages are gloo's, which PyTorch's tests match.
#include <c10/util/Exception.h>

#include <thread>

#include "process_group_tutti.h"

namespace tutti_torch {

namespace {

// Polls: a blocking wait would hold the store connection other threads share.
bool arrivedBy(c10d::Store& store, const std::string& key, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    if (store.check({key})) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

void ProcessGroupTutti::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  auto timeout = opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string prefix = "tutti_monitored_barrier/" + std::to_string(monitoredBarriers_++) + "/";
  auto ms = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  if (getRank() != 0) {
    store_->set(prefix + std::to_string(getRank()), std::vector<uint8_t>{1});
    TORCH_CHECK(arrivedBy(*store_, prefix + "released", deadline), "Rank ", getRank(),
                " successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0 "
                "(tutti backend: rank 0 did not release the barrier within ", ms, " ms)");
    return;
  }
  std::vector<int> missing;
  for (int r = 1; r < getSize(); ++r) {
    // Rank 0's own time is up before it could look: said as gloo says it.
    TORCH_CHECK(std::chrono::steady_clock::now() < deadline, "Rank 0 timed out in monitoredBarrier after ", ms,
                " ms (tutti backend; ranks ", r, " to ", getSize() - 1, " not checked)");
    if (arrivedBy(*store_, prefix + std::to_string(r), deadline)) continue;
    TORCH_CHECK(waitAllRanks, "Rank ", r, " failed to pass monitoredBarrier in ", ms,
                " ms (tutti backend; checked from rank 0)");
    missing.push_back(r);
  }
  if (!missing.empty()) {
    std::string list;
    for (int r : missing) list += (list.empty() ? "" : ", ") + std::to_string(r);
    TORCH_CHECK(false, "Ranks ", list, " failed to pass monitoredBarrier in ", ms, " ms (tutti backend; checked from rank 0)");
  }
  store_->set(prefix + "released", std::vector<uint8_t>{1});
}

}  // namespace tutti_torch
