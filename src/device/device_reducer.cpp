#include "src/device/device_reducer.h"

namespace tutti {

void DeviceReducer::post(const QueuedOp& op) const {
  Status st = queue_.post(op);
  if (st.ok()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.ok()) error_ = st;
}

void DeviceReducer::reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype,
                           RedOp op, int divisor) const {
  if (count > 0)
    post({dst, a, b, count, static_cast<uint32_t>(QueuedOpKind::kReduce), static_cast<int32_t>(dtype),
          static_cast<int32_t>(op), divisor});
}

void DeviceReducer::divide(void* dst, const void* src, size_t count, DataType dtype,
                           int divisor) const {
  if (count > 0)
    post({dst, src, nullptr, count, static_cast<uint32_t>(QueuedOpKind::kDivide), static_cast<int32_t>(dtype), 0,
          divisor});
}

void DeviceReducer::copy(void* dst, const void* src, size_t bytes) const {
  if (bytes > 0 && dst != src) post({dst, src, nullptr, bytes, static_cast<uint32_t>(QueuedOpKind::kCopy), 0, 0, 0});
}

Status DeviceReducer::takeError() {
  std::lock_guard<std::mutex> lock(mutex_);
  Status st = error_;
  error_ = Status::Ok();
  return st;
}

}  // namespace tutti
