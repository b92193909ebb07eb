// The Reducer the executor uses on device buffers: each reduce, divide and
// copy is a kernel queued on one stream of tutti's (copies too: see
// DeviceRuntime::copyKernelAsync), so consecutive
// chunks run back to back on the GPU while the host thread moves on. The
// Reducer interface cannot fail, so the first launch error is kept here and
// checked once the run is over.
#pragma once

#include <mutex>

#include "kernels/reducer.h"
#include "src/device/device_runtime.h"

namespace tutti {

class DeviceReducer final : public Reducer {
 public:
  DeviceReducer(DeviceRuntime& runtime, DeviceStream stream) : runtime_(runtime), stream_(stream) {}

  void reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
              int divisor) const override;
  void divide(void* dst, const void* src, size_t count, DataType dtype, int divisor) const override;
  void copy(void* dst, const void* src, size_t bytes) const override;
  const char* name() const override { return "device"; }

  // The first launch that failed since the last call, which clears it.
  Status takeError();

 private:
  void keep(const Status& st) const;

  DeviceRuntime& runtime_;
  DeviceStream stream_;
  mutable std::mutex mutex_;
  mutable Status error_;
};

}  // namespace tutti
