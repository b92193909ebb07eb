// The "tutti" backend of torch.distributed: a c10d process group whose
// collectives run on one tutti communicator, in issue order, on a background
// thread, and complete their Work's Future with the output tensors. Calls on
// CUDA tensors are tutti's stream-ordered device calls on the caller's
// current stream (device_stream.h, stream_work.h).
//
// A c10d::Backend of PyTorch 2.x; what later 2.x releases added is marked
// with the release (TUTTI_TORCH_AT_LEAST).
#pragma once

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include "completion_pool.h"
#include "src/common/serial_worker.h"
#include "point_to_point.h"
#include "tensor_map.h"
#include "tutti/tutti.h"

namespace tutti_torch {

// Where PyTorch's Backend interface grew what this backend overrides.
#define TUTTI_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

class ProcessGroupTutti : public c10d::Backend {
 public:
  // Rank 0 makes the unique id and publishes it in the store (a PrefixStore
  // per group, so every group gets its own).
  ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout);
  // A group over a communicator already made (split); takes it over.
  ProcessGroupTutti(tuttiComm_t comm, const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout);
  ~ProcessGroupTutti() override;

  // The creator torch.distributed.Backend.register_backend calls.
  static c10::intrusive_ptr<c10d::Backend> create(const c10::intrusive_ptr<c10d::Store>& store,
                                              int rank, int size,
                                              const std::chrono::duration<float>& timeout);

  const std::string getBackendName() const override { return "tutti"; }

  // Waits until no call is queued, running or completing (live_groups.h).
  void quiesce();

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  // Over the store, so that a rank that never arrives costs the others
  // nothing but the wait: rank 0 names who did not arrive (every such rank
  // with waitAllRanks), the others who failed them.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;
  // The 2.x surface (torch2_surface.cpp). Each coalesced call is its calls
  // issued in order with one Work for all; between startCoalescing and
  // endCoalescing every call is remembered and endCoalescing's Work covers
  // them (tutti runs each call at once: coalescing is a batching hint).
  c10::intrusive_ptr<c10d::Work> allgatherIntoTensorCoalesced(std::vector<at::Tensor>& outputs,
                                                              std::vector<at::Tensor>& inputs);
  c10::intrusive_ptr<c10d::Work> reduceScatterTensorCoalesced(std::vector<at::Tensor>& outputs,
                                                              std::vector<at::Tensor>& inputs,
                                                              const c10d::ReduceScatterOptions& opts);
  void beginCoalescing();
  c10::intrusive_ptr<c10d::Work> finishCoalescing();
#if TUTTI_TORCH_AT_LEAST(2, 1)
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions&) override {
    return allgatherIntoTensorCoalesced(outputs, inputs);
  }
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override {
    return reduceScatterTensorCoalesced(outputs, inputs, opts);
  }
  void startCoalescing() override { beginCoalescing(); }
  c10::intrusive_ptr<c10d::Work> endCoalescing() override { return finishCoalescing(); }
  c10::intrusive_ptr<c10d::Work> allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                  const c10d::AllreduceOptions& opts) override {
    return allreduceSparse(onlyTensor(tensors, "allreduce_sparse"), opts.reduceOp);
  }
#endif
#if TUTTI_TORCH_AT_LEAST(2, 8)
  // split_group: a tuttiCommSplit of this group's communicator; `ranks` are
  // the new group's members (this group's numbering), empty on non-members.
  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;
#endif
  // shrink_group: a tuttiCommShrink of this group's communicator. Declared
  // without `override`: PyTorch's Backend has them only from some 2.x on,
  // and where it has them these override its own.
  bool supportsShrinking() const { return true; }
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t>& ranksToExclude, int shrinkFlags = 0,
                                           const c10::intrusive_ptr<c10d::Backend::Options>& opts = nullptr);
  // The ranks tutti named as failed (tuttiCommFailedRanks), ascending.
  std::vector<int> failedRanks();
  // tuttiCommGrow, which PyTorch has no call for (tutti_torch.grow): every
  // member calls grow, keeping its rank; rank 0 publishes the grow's id in
  // `store` under `key`, where each new process's joinGrown finds it, taking
  // ranks size() .. newSize - 1 (membership.cpp).
  c10::intrusive_ptr<c10d::Backend> grow(int newSize, const c10::intrusive_ptr<c10d::Store>& store,
                                         const std::string& key);
  static c10::intrusive_ptr<c10d::Backend> joinGrown(const c10::intrusive_ptr<c10d::Store>& store,
                                                     const std::string& key, int rank, int newSize,
                                                     std::chrono::milliseconds timeout);
#if TUTTI_TORCH_AT_LEAST(2, 8)
  // backend.options: PyTorch's own type, bound (module.cpp) so that Python
  // can deep-copy it, as split_group does; PyTorch 2.11 binds no copy.
  struct Options : c10d::Backend::Options {
    explicit Options(std::chrono::milliseconds timeout) : c10d::Backend::Options("tutti", timeout) {}
  };
  // What PyTorch reads back (backend.options; split_group copies them).
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override { return options_; }
  // From any thread: the call in flight fails at once, and every later one
  // (tuttiCommRevoke); the communicator itself goes with the group.
  void abort() override;
  // Completes what was issued, then lets the communicator go; later calls fail.
  void shutdown() override;
#endif
  // Every rank counts the calls it issues to the group, from 0.
  void setSequenceNumberForGroup() override { sequence_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return sequence_; }

 private:
  // Runs `body` on the background queue; the Work completes with `outputs`
  // after it, or fails with what it threw. Where `where` is a CUDA tensor,
  // the body gets the caller's stream instead (onStream); else nullptr.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                         const at::Tensor& where, std::function<void(void* stream)> body);
  c10::intrusive_ptr<c10d::Work> onStream(c10d::OpType type, std::vector<at::Tensor> outputs,
                                          const at::Tensor& where, std::function<void(void* stream)> body);
  std::vector<Staged> stageRootList(const std::vector<std::vector<at::Tensor>>& lists,
                                           const at::Tensor& like, bool isRoot, const char* call,
                                           const char* which) const;
  // The root of a rooted call, checked against the group's size.
  int rootOf(int64_t root, const char* call) const;
  void startQueues();
  // The communicator's config for a group of this timeout.
  static tuttiConfig_t configFor(std::chrono::milliseconds timeout);
  // Throws, naming the call, once the group was aborted or shut down.
  void ensureOpen(const char* call) const;
  // Throws with tutti's message when a call failed.
  void check(tuttiResult_t result, const char* call) const;
  void allreduceIn(const at::Tensor& tensor, const c10d::ReduceOp& op, void* stream);
  c10::intrusive_ptr<c10d::Work> allreduceSparse(const at::Tensor& tensor, const c10d::ReduceOp& op);
  c10::intrusive_ptr<c10d::Work> pointToPoint(const at::Tensor& tensor, int peer, int tag, bool isSend);

  tuttiComm_t comm_ = nullptr;
  enum class State { kOpen, kAborted, kShutDown };
  std::atomic<State> state_{State::kOpen};
#if TUTTI_TORCH_AT_LEAST(2, 8)
  c10::intrusive_ptr<c10d::Backend::Options> options_;
  // The last split asked of this group, and what it gave (split()). The
  // store is held so that a later split's store cannot reuse its address.
  struct Split {
    c10::intrusive_ptr<c10d::Store> store;
    std::vector<int> ranks;
    bool member = false;
    c10::weak_intrusive_ptr<c10d::Backend> child{c10::intrusive_ptr<c10d::Backend>()};
  } lastSplit_;
#endif
  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  std::atomic<uint64_t> sequence_{0};
  uint64_t monitoredBarriers_ = 0;
  // Send and recv of host tensors (point_to_point.h); made at first use.
  std::unique_ptr<PointToPoint> p2p_;
  std::once_flag p2pMade_;
  // The calls issued since startCoalescing, while it is open.
  std::mutex coalescingMutex_;
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_;
  // Remembers a call's Work while coalescing; returns it.
  c10::intrusive_ptr<c10d::Work> issued(c10::intrusive_ptr<c10d::Work> work);
  // Runs collectives in issue order: every rank issues them in the same
  // order, so one after another can never cross two calls. Stopped before
  // comm_ is destroyed.
  std::unique_ptr<tutti::SerialWorker> queue_;
  // Completes the futures of calls on CUDA tensors once their events are done.
  std::unique_ptr<tutti::SerialWorker> completions_;
  // Completes the Works' futures, whose callbacks may wait for more calls.
  std::unique_ptr<CompletionPool> finisher_;
};

}  // namespace tutti_torch
