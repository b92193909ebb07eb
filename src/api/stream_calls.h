// Device buffers at the API: where a call's buffers live, checked, and the
// hand-over of device calls to the stream gates (src/comm/stream_gates.h).
#pragma once

#include <vector>

#include "src/api/comm_handle.h"
#include "src/comm/stream_gates.h"

namespace tutti {

// Where the call's buffers live: false for host memory, true for the
// communicator's device. Mixed kinds, another device than the
// communicator's, or a host-only communicator are refused, naming the buffer.
Result<bool> buffersOnDevice(const Communicator& comm, const void* sendbuff, const void* recvbuff);

// Queues the device calls of each communicator (one batch each) on their
// streams, on src/comm/stream_gates.h's terms; `api` names the call in errors.
Status enqueueDeviceCalls(std::vector<StreamBatch>& batches, const char* api);

}  // namespace tutti
