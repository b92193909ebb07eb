#include "src/comm/device_calls/stream_gates.h"

#include <memory>

#include "src/common/log.h"

namespace tutti {

namespace {

// One batch's events, worker and ticket, made on the caller's thread.
struct Prepared {
  Communicator* comm;
  std::vector<CollectiveArgs> calls;
  std::vector<DeviceEvent> ready;
  uint64_t worker = 0;  // the worker's number once launched: it must get its stop
  uint32_t ticket = 0;
  Status failed;  // set when the batch could not be queued: it only opens its gates
};

std::vector<DeviceStream> streamsOf(const std::vector<CollectiveArgs>& calls) {
  std::vector<DeviceStream> streams;
  for (const auto& c : calls) {
    bool seen = false;
    for (DeviceStream s : streams) seen |= s == c.stream;
    if (!seen) streams.push_back(c.stream);
  }
  return streams;
}

// The background task: the calls' ops to the worker, which starts once the
// inputs are ready; its stop; gates open. No CUDA call: a thread of the
// caller's may be in a copy that waits for these gates, and CUDA holds up
// launches and event calls of every other thread meanwhile (kernels/op_queue.h).
// Every batch that took a ticket runs this, failed or not, so the gates of
// the communicator's later batches open too.
void runBatch(Prepared& p, const ReportFailure& report) {
  Communicator& c = *p.comm;
  setLogRank(c.rank());
  Status st = !p.failed.ok()         ? p.failed
              : c.abortFlag().load() ? InvalidUsage("the communicator was aborted")
                                     : Status::Ok();
  // The call starts when its inputs are ready, as the caller's stream sees it.
  if (st.ok() && p.worker) st = c.deviceCalls()->queue().waitForStart(p.worker);
  if (st.ok()) st = c.runOnDevice(p.calls);  // reserved at enqueue
  if (p.worker) {
    Status stopped = c.deviceCalls()->queue().stop();
    if (st.ok()) st = stopped;
  }
  for (DeviceEvent e : p.ready) c.deviceCalls()->giveBack(e);
  if (!st.ok() && p.failed.ok()) {
    report(c, st);
    c.setAsyncError(st.code());
  }
  c.deviceCalls()->pass(p.ticket);
}

// A graph replays what was captured, but a gate opens once, from a thread
// that runs the call when it is made: refuse rather than hang a replay.
Status refuseCapture(DeviceRuntime& rt, const std::vector<StreamBatch>& batches) {
  for (const StreamBatch& b : batches)
    for (DeviceStream s : streamsOf(b.calls)) {
      TUTTI_ASSIGN_OR_RETURN(bool captured, rt.capturing(s));
      if (captured)
        return InvalidUsage("the stream is being captured into a CUDA graph: tutti runs device calls "
                            "from a thread of its own and cannot be captured yet; make the call "
                            "outside the capture");
    }
  return Status::Ok();
}

}  // namespace

Status enqueueOnStreams(std::vector<StreamBatch>& batches, const DrainEarlier& drain,
                        const ReportFailure& report) {
  DeviceRuntime& rt = deviceRuntime();
  TUTTI_RETURN_IF_ERROR(refuseCapture(rt, batches));
  std::vector<Communicator::DeviceBatch> missing;
  for (StreamBatch& b : batches) {
    if (b.comm->readyForDevice(b.calls)) continue;
    drain(*b.comm);
    missing.push_back({b.comm, &b.calls});
  }
  // Together: ranks of one group sharing this thread connect to each other.
  // A peer that never comes is named, and fails the communicator, as a
  // host call's would be.
  if (Status st = Communicator::reserveForDevice(missing); !st.ok())
    return missing.front().comm->explainSetupFailure(st);
  std::vector<std::shared_ptr<Prepared>> prepared;
  auto undo = [&](const Status& st) {
    for (auto& p : prepared)
      for (DeviceEvent e : p->ready) p->comm->deviceCalls()->giveBack(e);
    return st;
  };
  for (StreamBatch& b : batches) {
    auto p = std::make_shared<Prepared>();
    p->comm = b.comm;
    p->calls = std::move(b.calls);
    prepared.push_back(p);
    // An event is made on the current device and recorded only on a stream
    // of that device: a group over several GPUs leaves the last one current.
    DeviceScope scope(rt, p->comm->device());
    if (!scope.status().ok()) return undo(scope.status());
    for (DeviceStream s : streamsOf(p->calls)) {
      auto e = p->comm->deviceCalls()->recordInputsReady(s);
      if (!e.ok()) return undo(e.status().withContext("recording the inputs' event on the stream"));
      p->ready.push_back(*e);
    }
  }
  // From the first ticket on, every batch goes to its background, which
  // opens its gates whatever happens next.
  Status queued;
  for (auto& p : prepared) {
    DeviceCalls& dc = *p->comm->deviceCalls();
    p->ticket = dc.takeTicket();
    for (DeviceStream s : streamsOf(p->calls))
      if (queued.ok()) queued = dc.gate(s, p->ticket).withContext("queueing the completion gate on the stream");
  }
  // The workers, launched here since the background thread may not launch.
  for (auto& p : prepared) {
    if (!queued.ok()) break;
    DeviceScope scope(rt, p->comm->device());
    queued = scope.status().ok() ? p->comm->deviceCalls()->queue().launchWorker(p->ready, &p->worker)
                                 : scope.status();
  }
  for (size_t i = 0; i < prepared.size(); ++i) {
    auto p = prepared[i];
    p->failed = queued;
    batches[i].background->post([p, report] { runBatch(*p, report); });
  }
  return queued;
}

}  // namespace tutti
