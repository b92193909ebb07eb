// Stream order for device buffers, as NCCL gives it: the call returns at
// once, and work the caller queues on the stream after it sees the result.
// Per call (or per group, per communicator) tutti records an event on each
// stream the calls name (their inputs are ready there) and queues a gate on
// the stream that holds it until the result is in device memory: a wait, on
// the device, for a page-locked word to reach the batch's ticket. The
// communicator's background thread waits for the events, runs the calls on
// the device, then opens the gates by writing the ticket. A failure opens them too and becomes the
// communicator's async error (tuttiCommGetAsyncError), as in NCCL.
#pragma once

#include <functional>
#include <vector>

#include "src/comm/communicator.h"
#include "src/common/serial_worker.h"

namespace tutti {

// Device calls of one communicator that run together, on its background thread.
struct StreamBatch {
  Communicator* comm;
  SerialWorker* background;
  std::vector<CollectiveArgs> calls;
};

// What the caller does before a batch's connections or scratch are made:
// waits for the communicator's earlier calls (nothing may still use them).
using DrainEarlier = std::function<void(Communicator&)>;
// How a failure in the background is reported (last error, logs).
using ReportFailure = std::function<void(Communicator&, const Status&)>;

// Queues every batch on its streams and returns. What the calls need
// (connections, scratch) is made first, on the caller's thread, before any
// gate can hold a stream: making it may wait for peers, freeing memory for
// the whole device. Events for all batches are recorded before any gate is
// queued, so communicators sharing a stream in one group do not wait on
// each other's gates.
Status enqueueOnStreams(std::vector<StreamBatch>& batches, const DrainEarlier& drain,
                        const ReportFailure& report);

}  // namespace tutti
