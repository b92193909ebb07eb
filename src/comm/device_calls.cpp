#include "src/comm/device_calls.h"

#include <algorithm>

namespace tutti {

Result<std::unique_ptr<DeviceCalls>> DeviceCalls::create(DeviceRuntime& runtime, int device) {
  DeviceScope scope(runtime, device);
  TUTTI_RETURN_IF_ERROR(scope.status());
  TUTTI_ASSIGN_OR_RETURN(DeviceStream stream, runtime.createStream());
  return std::unique_ptr<DeviceCalls>(new DeviceCalls(runtime, device, stream));
}

DeviceCalls::~DeviceCalls() {
  (void)runtime_.synchronize(stream_);
  if (scratch_) runtime_.freeDevice(scratch_);
  for (void* p : retired_) runtime_.freeDevice(p);
  runtime_.destroyStream(stream_);
}

Result<void*> DeviceCalls::scratch(size_t bytes) {
  if (scratchBytes_ >= bytes) return scratch_;
  DeviceScope scope(runtime_, device_);
  TUTTI_RETURN_IF_ERROR(scope.status());
  const size_t grown = std::max(bytes, 2 * scratchBytes_);
  TUTTI_ASSIGN_OR_RETURN(void* p, runtime_.allocDevice(grown));
  if (scratch_) retired_.push_back(scratch_);
  scratch_ = p;
  scratchBytes_ = grown;
  return scratch_;
}

Status DeviceCalls::finish() {
  Status launch = reducer_.takeError();
  Status done = runtime_.synchronize(stream_);
  return launch.ok() ? done : launch;
}

}  // namespace tutti
