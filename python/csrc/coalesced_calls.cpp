// The coalesced calls: many tensors in one collective, flattened into one
// buffer per call so that small tensors pay one latency, not one each.
#include <c10/util/Exception.h>

#include "process_group_tutti.h"
#include "tensor_map.h"

namespace tutti_torch {

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "tutti backend, rank ", getRank(), ": allreduce_coalesced of no tensors");
  for (const auto& t : tensors) {
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type() && t.device() == tensors[0].device(),
                "tutti backend, rank ", getRank(), ": allreduce_coalesced takes tensors of one type on one device (",
                tensors[0].scalar_type(), " on ", tensors[0].device(), ", then ", t.scalar_type(), " on ", t.device(),
                ")");
    TORCH_CHECK(!t.is_sparse(), "tutti backend: allreduce_coalesced takes dense tensors");
  }
  tuttiType(tensors[0].scalar_type());
  std::vector<at::Tensor> flat;
  for (const auto& t : tensors) flat.push_back(placed(t).reshape(-1));
  at::Tensor all = at::cat(flat);
  auto op = opts.reduceOp;
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, tensors, all, [this, all, tensors, op](void* stream) {
    allreduceIn(all, op, stream);
    int64_t at = 0;
    for (const auto& t : tensors) {
      t.copy_(all.narrow(0, at, t.numel()).view(t.sizes()));
      at += t.numel();
    }
  });
}

// outputLists[r][i] receives rank r's inputs[i]: every rank's inputs are
// flattened into one row, and the rows gathered at once.
c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  TORCH_CHECK(static_cast<int>(outputLists.size()) == getSize(), "tutti backend, rank ", getRank(),
              ": allgather_coalesced needs one output list per rank (", getSize(), "), got ", outputLists.size());
  TORCH_CHECK(!inputs.empty(), "tutti backend, rank ", getRank(), ": allgather_coalesced of no tensors");
  for (const auto& list : outputLists) {
    TORCH_CHECK(list.size() == inputs.size(), "tutti backend, rank ", getRank(),
                ": allgather_coalesced's output lists must hold one tensor per input (", inputs.size(), ")");
    for (size_t i = 0; i < inputs.size(); ++i)
      TORCH_CHECK(list[i].numel() == inputs[i].numel() && list[i].scalar_type() == inputs[i].scalar_type(),
                  "tutti backend: allgather_coalesced's output ", i, " must match input ", i, "'s size and type");
  }
  for (const auto& t : inputs)
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(), "tutti backend, rank ", getRank(),
                ": allgather_coalesced takes inputs of one type (", inputs[0].scalar_type(), ", then ",
                t.scalar_type(), ")");
  auto type = tuttiType(inputs[0].scalar_type());
  std::vector<at::Tensor> flat;
  for (const auto& t : inputs) flat.push_back(placed(t).reshape(-1));
  at::Tensor row = at::cat(flat);
  std::vector<at::Tensor> outs;
  for (const auto& list : outputLists) outs.insert(outs.end(), list.begin(), list.end());
  auto lists = outputLists;
  return enqueue(c10d::OpType::ALLGATHER_COALESCED, outs, row, [this, row, type, lists](void* stream) {
    at::Tensor rows = at::empty({getSize(), row.numel()}, row.options());
    if (row.numel() > 0)
      check(tuttiAllGather(row.data_ptr(), rows.data_ptr(), static_cast<size_t>(row.numel()), type, comm_, stream),
            "tuttiAllGather (allgather_coalesced)");
    for (int r = 0; r < getSize(); ++r) {
      int64_t at = 0;
      for (const auto& out : lists[r]) {
        out.copy_(rows[r].narrow(0, at, out.numel()).view(out.sizes()));
        at += out.numel();
      }
    }
  });
}

}  // namespace tutti_torch
