// All-reduce of sparse COO tensors (sparse embedding gradients), as gloo
// serves it: every rank's indices and values are gathered, padded to the
// largest count, and summed into one coalesced tensor that replaces the input.
#include <c10/util/Exception.h>

#include "process_group_tutti.h"
#include "tensor_map.h"

namespace tutti_torch {

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduceSparse(const at::Tensor& tensor,
                                                                  const c10d::ReduceOp& op) {
  TORCH_CHECK(op == c10d::ReduceOp::SUM, "tutti backend, rank ", getRank(),
              ": all-reduce of a sparse tensor sums only (as gloo)");
  TORCH_CHECK(tensor.is_cpu(), "tutti backend, rank ", getRank(), ": sparse all-reduce takes host tensors");
  auto valueType = tuttiType(tensor.scalar_type());
  at::Tensor input = tensor.coalesce();
  return enqueue(c10d::OpType::ALLREDUCE, {tensor}, at::Tensor(), [this, tensor, input, valueType](void*) {
    const int n = getSize();
    at::Tensor indices = input._indices().contiguous(), values = input._values().contiguous();
    const int64_t nnz = input._nnz(), sparseDims = indices.size(0);
    // Counts first: each rank pads to the largest.
    at::Tensor nnzs = at::empty({n}, at::kLong), mine = at::full({1}, nnz, at::kLong);
    check(tuttiAllGather(mine.data_ptr(), nnzs.data_ptr(), 1, tuttiInt64, comm_, nullptr),
          "tuttiAllGather (sparse counts)");
    const int64_t most = nnzs.max().item<int64_t>();
    std::vector<int64_t> valueShape = values.sizes().vec();
    valueShape[0] = most;
    at::Tensor paddedIdx = at::zeros({sparseDims, most}, at::kLong), paddedVal = at::zeros(valueShape, values.options());
    paddedIdx.narrow(1, 0, nnz).copy_(indices);
    paddedVal.narrow(0, 0, nnz).copy_(values);
    paddedIdx = paddedIdx.contiguous();
    std::vector<int64_t> allValShape = valueShape;
    allValShape.insert(allValShape.begin(), n);
    at::Tensor allIdx = at::empty({n, sparseDims, most}, at::kLong), allVal = at::empty(allValShape, values.options());
    if (paddedIdx.numel() > 0)
      check(tuttiAllGather(paddedIdx.data_ptr(), allIdx.data_ptr(), paddedIdx.numel(), tuttiInt64, comm_, nullptr),
            "tuttiAllGather (sparse indices)");
    if (paddedVal.numel() > 0)
      check(tuttiAllGather(paddedVal.data_ptr(), allVal.data_ptr(), paddedVal.numel(), valueType, comm_, nullptr),
            "tuttiAllGather (sparse values)");
    std::vector<at::Tensor> idx, val;
    for (int r = 0; r < n; ++r) {
      int64_t k = nnzs[r].item<int64_t>();
      idx.push_back(allIdx[r].narrow(1, 0, k));
      val.push_back(allVal[r].narrow(0, 0, k));
    }
    at::Tensor sum = at::sparse_coo_tensor(at::cat(idx, 1), at::cat(val, 0), input.sizes()).coalesce();
    tensor.copy_(sum);
  });
}

}  // namespace tutti_torch
