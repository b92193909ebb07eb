#include "device_stream.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#ifdef TUTTI_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace tutti_torch {

bool deviceCallsBuilt() {
#ifdef TUTTI_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

c10::Stream currentStream(c10::Device device) {
  return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
}

void* streamHandle(const c10::Stream& stream) {
#ifdef TUTTI_TORCH_CUDA
  return c10::cuda::CUDAStream(stream).stream();
#else
  TORCH_CHECK(false, "tutti backend: built without CUDA, cannot run on stream ", stream);
#endif
}

}  // namespace tutti_torch
