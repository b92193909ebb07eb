// The "tutti" backend of torch.distributed: a c10d process group whose
// collectives run on one tutti communicator, in issue order, on a background
// thread, and complete their Work's Future with the output tensors. Calls on
// CUDA tensors are tutti's stream-ordered device calls on the caller's
// current stream (device_stream.h, stream_work.h).
//
// PyTorch 1.x backends derive from c10d::ProcessGroup, 2.x from c10d::Backend;
// the collective signatures are the same in both.
#pragma once

#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <memory>

#include "src/common/serial_worker.h"
#include "tensor_map.h"
#include "tutti/tutti.h"

namespace tutti_torch {

#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

class ProcessGroupTutti : public GroupBase {
 public:
  // Rank 0 makes the unique id and publishes it in the store (a PrefixStore
  // per group, so every group gets its own).
  ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout);
  ~ProcessGroupTutti() override;

  // The creator torch.distributed.Backend.register_backend calls.
  static c10::intrusive_ptr<GroupBase> create(const c10::intrusive_ptr<c10d::Store>& store,
                                              int rank, int size,
                                              const std::chrono::duration<float>& timeout);

  const std::string getBackendName() const override { return "tutti"; }

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
  // Throws with tutti's message when a call failed.
  void check(tuttiResult_t result, const char* call) const;
  void allreduceIn(const at::Tensor& tensor, const c10d::ReduceOp& op, void* stream);

  tuttiComm_t comm_ = nullptr;
  // Runs collectives in issue order: every rank issues them in the same
  // order, so one after another can never cross two calls. Stopped before
  // comm_ is destroyed.
  std::unique_ptr<tutti::SerialWorker> queue_;
  // Completes the futures of calls on CUDA tensors once their events are done.
  std::unique_ptr<tutti::SerialWorker> completions_;
};

}  // namespace tutti_torch
