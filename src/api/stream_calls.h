// Stream order for device buffers, as NCCL gives it: the call returns at once,
// and work the caller queues on the stream after it sees the result.
// Per call (or per group, per communicator) tutti records an event on each
// stream the calls name (their inputs are ready there) and queues a gate on
// the stream that holds it until the result is back in device memory. The
// communicator's background thread waits for the events, runs the staged
// collective, then opens the gates. A failure opens them too and becomes
// the communicator's async error (tuttiCommGetAsyncError), as in NCCL.
#pragma once

#include <vector>

#include "src/api/comm_handle.h"

namespace tutti {

// Where the call's buffers live: false for host memory, true for the
// communicator's device. Mixed kinds, another device than the
// communicator's, or a host-only communicator are refused, naming the buffer.
Result<bool> buffersOnDevice(const Communicator& comm, const void* sendbuff, const void* recvbuff);

// Device calls of one communicator that run together.
struct StreamBatch {
  tuttiComm_t comm;
  std::vector<CollectiveArgs> calls;
};

// Queues every batch on its streams and returns: events for all batches are
// recorded before any gate is queued, so communicators sharing a stream in
// one group do not wait on each other's gates.
Status enqueueOnStreams(std::vector<StreamBatch>& batches, const char* api);

}  // namespace tutti
