// The Reducer the executor uses on device buffers: each reduce, divide and
// copy goes to the op queue (src/device/op_queue.h), whose worker kernel
// runs them in order on tutti's stream while the host thread moves on: the
// background thread makes no CUDA call. The Reducer interface cannot fail,
// so the first failure to queue is kept here and checked once the run is
// over.
#pragma once

#include <mutex>

#include "kernels/reducer.h"
#include "src/device/op_queue.h"

namespace tutti {

class DeviceReducer final : public Reducer {
 public:
  explicit DeviceReducer(OpQueue& queue) : queue_(queue) {}

  void reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
              int divisor) const override;
  void divide(void* dst, const void* src, size_t count, DataType dtype, int divisor) const override;
  void copy(void* dst, const void* src, size_t bytes) const override;
  const char* name() const override { return "device"; }

  // The first op that could not be queued since the last call, which clears it.
  Status takeError();

 private:
  void post(const QueuedOp& op) const;

  OpQueue& queue_;
  mutable std::mutex mutex_;
  mutable Status error_;
};

}  // namespace tutti
