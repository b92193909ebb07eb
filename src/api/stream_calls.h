// Device buffers at the API: where a call's buffers live, checked, and the
// hand-over of device calls to the stream gates (src/comm/device_calls/stream_gates.h).
#pragma once

#include <vector>

#include "src/api/comm_handle.h"
#include "src/comm/device_calls/stream_gates.h"
#include "src/device/device_runtime.h"

namespace tutti {

// Where the call's buffers live (`onDevice`): false for host memory, true
// for the communicator's device. Mixed kinds, another device than the
// communicator's, a host-only communicator, and device buffers not aligned
// to their elements (`elemSize`) are refused, naming the buffer.
Status askWhereBuffersLive(DeviceRuntime& rt, const Communicator& comm, const void* sendbuff,
                           const void* recvbuff, size_t elemSize, bool* onDevice);
inline Status buffersOnDevice(const Communicator& comm, const void* sendbuff, const void* recvbuff,
                              size_t elemSize, bool* onDevice) {
  DeviceRuntime& rt = deviceRuntime();
  if (rt.mayHoldDeviceMemory()) return askWhereBuffersLive(rt, comm, sendbuff, recvbuff, elemSize, onDevice);
  *onDevice = false;
  return Status::Ok();
}

// Queues the device calls of each communicator (one batch each) on their
// streams, on src/comm/device_calls/stream_gates.h's terms; `api` names the call in errors.
Status enqueueDeviceCalls(std::vector<StreamBatch>& batches, const char* api);

}  // namespace tutti
