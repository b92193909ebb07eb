#include "src/device/device_reducer.h"

namespace tutti {

void DeviceReducer::keep(const Status& st) const {
  if (st.ok()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.ok()) error_ = st;
}

void DeviceReducer::reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype,
                           RedOp op, int divisor) const {
  if (count > 0) keep(runtime_.reduceAsync(dst, a, b, count, dtype, op, divisor, stream_));
}

void DeviceReducer::divide(void* dst, const void* src, size_t count, DataType dtype,
                           int divisor) const {
  if (count > 0) keep(runtime_.divideAsync(dst, src, count, dtype, divisor, stream_));
}

void DeviceReducer::copy(void* dst, const void* src, size_t bytes) const {
  if (bytes > 0 && dst != src) keep(runtime_.copyKernelAsync(dst, src, bytes, stream_));
}

Status DeviceReducer::takeError() {
  std::lock_guard<std::mutex> lock(mutex_);
  Status st = error_;
  error_ = Status::Ok();
  return st;
}

}  // namespace tutti
