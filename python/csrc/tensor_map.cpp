#include "tensor_map.h"

#include <c10/util/Exception.h>

#include "device_stream.h"

namespace tutti_torch {

tuttiDataType_t tuttiType(at::ScalarType type) {
  switch (type) {
    case at::kChar: return tuttiInt8;
    case at::kByte: return tuttiUint8;
    case at::kBool: return tuttiUint8;
    case at::kInt: return tuttiInt32;
    case at::kLong: return tuttiInt64;
    case at::kHalf: return tuttiFloat16;
    case at::kFloat: return tuttiFloat32;
    case at::kDouble: return tuttiFloat64;
    case at::kBFloat16: return tuttiBfloat16;
    default: TORCH_CHECK(false, "tutti backend: tensors of type ", type, " are not supported");
  }
}

bool isBitwise(const c10d::ReduceOp& op) {
  return op == c10d::ReduceOp::BAND || op == c10d::ReduceOp::BOR || op == c10d::ReduceOp::BXOR;
}

tuttiRedOp_t tuttiOp(const c10d::ReduceOp& op, at::ScalarType type) {
  if (type == at::kBool) {  // logical or/and on 0/1 bytes
    if (op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::MAX) return tuttiMax;
    if (op == c10d::ReduceOp::PRODUCT || op == c10d::ReduceOp::MIN) return tuttiMin;
    TORCH_CHECK(false, "tutti backend: op ", static_cast<int>(op.op_), " is not defined on bool tensors");
  }
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return tuttiSum;
    case c10d::ReduceOp::AVG: return tuttiAvg;
    case c10d::ReduceOp::PRODUCT: return tuttiProd;
    case c10d::ReduceOp::MIN: return tuttiMin;
    case c10d::ReduceOp::MAX: return tuttiMax;
    default: TORCH_CHECK(false, "tutti backend: reduce op ", static_cast<int>(op.op_), " is not supported here");
  }
}

at::Tensor placed(const at::Tensor& tensor) {
  at::Tensor t = tensor;
  if (!t.is_cpu() && !(t.is_cuda() && deviceCallsBuilt())) t = t.to(at::kCPU);
  return t.is_contiguous() ? t : t.contiguous();
}

Staged stage(const at::Tensor& tensor) { return Staged{tensor, placed(tensor)}; }

void unstage(const Staged& staged) {
  if (!staged.buffer.is_same(staged.user)) staged.user.copy_(staged.buffer);
}

const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* call) {
  TORCH_CHECK(tensors.size() == 1, "tutti backend: ", call, " takes one tensor per process, got ",
              tensors.size());
  return tensors[0];
}

}  // namespace tutti_torch
