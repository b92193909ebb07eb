// What PyTorch 2.x's Backend adds (declared in process_group_tutti.h, the
// overrides compiled where that PyTorch is): the tensor-coalesced calls
// FSDP uses, startCoalescing/endCoalescing, and split on tuttiCommSplit.
// The bodies build on any PyTorch, so this build compiles them too.
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "process_group_tutti.h"
#include "tutti_work.h"

namespace tutti_torch {

namespace {

#if TUTTI_TORCH_AT_LEAST(2, 1)
constexpr auto kCoalesced = c10d::OpType::COALESCED;
#else
constexpr auto kCoalesced = c10d::OpType::UNKNOWN;
#endif

// One Work for many: completes once all have, with the first error.
c10::intrusive_ptr<c10d::Work> combined(int rank, c10d::OpType type,
                                        const std::vector<c10::intrusive_ptr<c10d::Work>>& works) {
  std::vector<at::Tensor> outputs;
  c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(
      c10::FutureType::create(c10::ListType::create(c10::TensorType::get())));
  for (const auto& w : works) {
    auto r = w->result();
    outputs.insert(outputs.end(), r.begin(), r.end());
    futures.push_back(w->getFuture());
  }
  auto all = c10::make_intrusive<TuttiWork>(rank, type, outputs);
  c10::collectAll(futures)->addCallback([all, works](c10::ivalue::Future&) {
    for (const auto& w : works) {
      if (w->getFuture()->hasError()) return all->fail(w->getFuture()->exception_ptr());
    }
    all->complete();
  });
  return all;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::issued(c10::intrusive_ptr<c10d::Work> work) {
  std::lock_guard<std::mutex> lock(coalescingMutex_);
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

void ProcessGroupTutti::beginCoalescing() {
  std::lock_guard<std::mutex> lock(coalescingMutex_);
  TORCH_CHECK(!coalescing_, "tutti backend, rank ", getRank(), ": startCoalescing while already coalescing");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::finishCoalescing() {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  {
    std::lock_guard<std::mutex> lock(coalescingMutex_);
    TORCH_CHECK(coalescing_, "tutti backend, rank ", getRank(), ": endCoalescing without startCoalescing");
    coalescing_ = false;
    works.swap(coalesced_);
  }
  return combined(getRank(), kCoalesced, works);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgatherIntoTensorCoalesced(std::vector<at::Tensor>& outputs,
                                                                              std::vector<at::Tensor>& inputs) {
  TORCH_CHECK(outputs.size() == inputs.size(), "tutti backend, rank ", getRank(),
              ": allgather_into_tensor_coalesced needs one output per input (", inputs.size(), "), got ",
              outputs.size());
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (size_t i = 0; i < inputs.size(); ++i) works.push_back(_allgather_base(outputs[i], inputs[i], {}));
  return combined(getRank(), kCoalesced, works);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduceScatterTensorCoalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "tutti backend, rank ", getRank(),
              ": reduce_scatter_tensor_coalesced needs one output per input (", inputs.size(), "), got ",
              outputs.size());
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (size_t i = 0; i < inputs.size(); ++i) works.push_back(_reduce_scatter_base(outputs[i], inputs[i], opts));
  return combined(getRank(), kCoalesced, works);
}

#if TUTTI_TORCH_AT_LEAST(2, 8)
// Every rank of this group calls it (PyTorch's split_group does): members
// with the new group's ranks, the others with none.
c10::intrusive_ptr<c10d::Backend> ProcessGroupTutti::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                           const std::vector<int>& ranks,
                                                           const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  ensureOpen("split");
  // One backend serves both of the group's devices, and ProcessGroup's
  // splitGroup asks each device's backend: the second ask of one split (the
  // same store and ranks) gets the first's answer, or ranks that are not
  // members (asked twice) and ranks that are (asked once) would disagree on
  // how many tuttiCommSplit calls there are.
  if (lastSplit_.store.get() == store.get() && lastSplit_.ranks == ranks) {
    if (!lastSplit_.member) return nullptr;
    if (auto child = lastSplit_.child.lock()) return child;
  }
  auto me = std::find(ranks.begin(), ranks.end(), getRank());
  // The color names the member set: its lowest rank is unique to it among
  // disjoint groups.
  int color = me == ranks.end() ? TUTTI_SPLIT_NOCOLOR : *std::min_element(ranks.begin(), ranks.end());
  int key = me == ranks.end() ? 0 : static_cast<int>(me - ranks.begin());
  tuttiComm_t child = nullptr;
  queue_->drain();  // after every call issued so far, from this thread
  check(tuttiCommSplit(comm_, color, key, &child, nullptr), "tuttiCommSplit");
  lastSplit_.store = store;
  lastSplit_.ranks = ranks;
  lastSplit_.member = child != nullptr;
  lastSplit_.child.reset();
  if (!child) return nullptr;
  auto timeout = opts ? opts->timeout : timeout_;
  c10::intrusive_ptr<c10d::Backend> group =
      c10::make_intrusive<ProcessGroupTutti>(child, store, key, static_cast<int>(ranks.size()), timeout);
  lastSplit_.child = c10::weak_intrusive_ptr<c10d::Backend>(group);
  return group;
}

void ProcessGroupTutti::abort() {
  if (state_.exchange(State::kAborted) != State::kOpen || !comm_) return;
  // Revoke waits (milliseconds) for the call in flight to leave tutti, which
  // needs no GIL; the queue's thread may need it to fail that call's Work.
  std::optional<pybind11::gil_scoped_release> withoutGil;
  if (Py_IsInitialized() && PyGILState_Check()) withoutGil.emplace();
  check(tuttiCommRevoke(comm_, 0), "abort (tuttiCommRevoke)");
}

void ProcessGroupTutti::shutdown() {
  State open = State::kOpen;
  if (!state_.compare_exchange_strong(open, State::kShutDown)) return;
  std::optional<pybind11::gil_scoped_release> withoutGil;  // as in the destructor
  if (Py_IsInitialized() && PyGILState_Check()) withoutGil.emplace();
  p2p_.reset();
  queue_->drain();
  completions_->drain();
  finisher_.reset();  // runs the completions queued, then joins
  tuttiComm_t comm = std::exchange(comm_, nullptr);
  if (comm) check(tuttiCommDestroy(comm), "shutdown (tuttiCommDestroy)");
}
#endif

}  // namespace tutti_torch
