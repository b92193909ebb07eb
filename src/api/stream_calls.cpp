#include "src/api/stream_calls.h"

#include <condition_variable>
#include <mutex>

#include "src/api/api_guard.h"
#include "src/comm/device_direct.h"
#include "src/comm/device_staging.h"

namespace tutti {

namespace {

std::string whereIs(const PointerInfo& p) {
  return p.onDevice ? "device memory (device " + std::to_string(p.device) + ")" : "host memory";
}

// Holds a stream (in a host function) until the collective is done.
class StreamGate {
 public:
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  void waitOpen() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
};

// Runs on the runtime's callback thread; owns one reference to the gate.
void holdStreamUntilOpen(void* arg) {
  auto* gate = static_cast<std::shared_ptr<StreamGate>*>(arg);
  (*gate)->waitOpen();
  delete gate;
}

// One batch's events and gates, made on the caller's thread.
struct Prepared {
  tuttiComm_t comm;
  std::vector<CollectiveArgs> calls;
  std::vector<DeviceEvent> ready;
  std::vector<std::shared_ptr<StreamGate>> gates;
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

void openAll(Prepared& p) {
  for (auto& g : p.gates) g->open();
}

// The background task: inputs ready, the collective (GPU to GPU, or staged
// through host memory), gates open.
void runBatch(Prepared& p, const char* api) {
  DeviceRuntime& rt = deviceRuntime();
  Communicator& c = *p.comm->impl;
  setLogRank(c.rank());
  Status st = c.abortFlag().load() ? InvalidUsage("the communicator was aborted") : rt.setDevice(c.device());
  for (DeviceEvent e : p.ready) {
    if (st.ok()) st = rt.waitEvent(e);
    rt.destroyEvent(e);
  }
  if (st.ok()) st = c.direct() ? c.direct()->run(p.calls) : (*c.staging())->run(c, p.calls);  // reserved at enqueue
  if (!st.ok()) {
    report(p.comm, api, st);
    c.setAsyncError(st.code());
  }
  openAll(p);
}

}  // namespace

Result<bool> buffersOnDevice(const Communicator& comm, const void* sendbuff, const void* recvbuff) {
  DeviceRuntime& rt = deviceRuntime();
  PointerInfo send = rt.pointerInfo(sendbuff), recv = rt.pointerInfo(recvbuff);
  if (sendbuff && recvbuff && send.onDevice != recv.onDevice)
    return InvalidArgument("sendbuff is " + whereIs(send) + " but recvbuff is " + whereIs(recv) +
                           ": a call's buffers must all be device memory or all host memory");
  const bool onDevice = send.onDevice || recv.onDevice;
  if (!onDevice) return false;
  const PointerInfo& p = send.onDevice ? send : recv;
  const char* which = send.onDevice ? "sendbuff" : "recvbuff";
  if (comm.device() < 0)
    return InvalidUsage(std::string(which) + " is " + whereIs(p) +
                        " but this communicator is host-only (no CUDA device was current when it "
                        "was made): make it with the device current, or pass host buffers");
  for (const PointerInfo* q : {&send, &recv})
    if (q->onDevice && q->device != comm.device())
      return InvalidUsage(std::string(q == &send ? "sendbuff" : "recvbuff") + " is " + whereIs(*q) +
                          " but the communicator serves device " + std::to_string(comm.device()));
  return true;
}

Status enqueueOnStreams(std::vector<StreamBatch>& batches, const char* api) {
  DeviceRuntime& rt = deviceRuntime();
  std::vector<std::shared_ptr<Prepared>> prepared;
  auto undo = [&](const Status& st) {
    for (auto& p : prepared) {
      for (DeviceEvent e : p->ready) rt.destroyEvent(e);
      openAll(*p);  // gates already queued must not hold their streams forever
    }
    return st;
  };
  // What the calls need (P2P connections and scratch, or staging memory)
  // first, before any gate can hold a stream: making it may wait for peers,
  // and freeing it for the whole device.
  std::vector<DeviceDirect::Batch> toConnect;
  for (StreamBatch& b : batches) {
    Communicator& c = *b.comm->impl;
    if (c.direct()) {
      if (c.direct()->reserved(b.calls)) continue;
      drainBackground(b.comm);
      toConnect.push_back({c.direct(), &b.calls});
      continue;
    }
    TUTTI_ASSIGN_OR_RETURN(DeviceStaging* staging, c.staging());
    if (staging->reserved(b.calls, c.size())) continue;
    drainBackground(b.comm);  // no earlier call may still use what is replaced
    // tutti's stream belongs to the communicator's device; the caller keeps theirs.
    DeviceScope scope(rt, c.device());
    TUTTI_RETURN_IF_ERROR(scope.status());
    TUTTI_RETURN_IF_ERROR(staging->reserve(b.calls, c.size()));
  }
  // Together: ranks of one group sharing this thread connect to each other.
  TUTTI_RETURN_IF_ERROR(DeviceDirect::reserve(toConnect));
  for (StreamBatch& b : batches) {
    auto p = std::make_shared<Prepared>();
    p->comm = b.comm;
    p->calls = std::move(b.calls);
    prepared.push_back(p);
    for (DeviceStream s : streamsOf(p->calls)) {
      auto e = rt.recordEvent(s);
      if (!e.ok()) return undo(e.status().withContext("recording the inputs' event on the stream"));
      p->ready.push_back(*e);
    }
  }
  for (auto& p : prepared)
    for (DeviceStream s : streamsOf(p->calls)) {
      p->gates.push_back(std::make_shared<StreamGate>());
      auto* ref = new std::shared_ptr<StreamGate>(p->gates.back());
      Status st = rt.launchHostFunc(s, holdStreamUntilOpen, ref);
      if (!st.ok()) {
        delete ref;
        return undo(st.withContext("queueing the completion gate on the stream"));
      }
    }
  for (auto& p : prepared) backgroundOf(p->comm).post([p, api] { runBatch(*p, api); });
  return Status::Ok();
}

}  // namespace tutti
