#include "src/comm/stream_gates.h"

#include <condition_variable>
#include <memory>
#include <mutex>

#include "src/common/log.h"

namespace tutti {

namespace {

// Holds a stream (in a host function) until the calls are done.
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
  Communicator* comm;
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

// The background task: inputs ready, the calls on the device, gates open.
void runBatch(Prepared& p, const ReportFailure& report) {
  DeviceRuntime& rt = deviceRuntime();
  Communicator& c = *p.comm;
  setLogRank(c.rank());
  Status st = c.abortFlag().load() ? InvalidUsage("the communicator was aborted") : rt.setDevice(c.device());
  for (DeviceEvent e : p.ready) {
    if (st.ok()) st = rt.waitEvent(e);
    rt.destroyEvent(e);
  }
  if (st.ok()) st = c.runOnDevice(p.calls);  // reserved at enqueue
  if (!st.ok()) {
    report(c, st);
    c.setAsyncError(st.code());
  }
  openAll(p);
}

}  // namespace

Status enqueueOnStreams(std::vector<StreamBatch>& batches, const DrainEarlier& drain,
                        const ReportFailure& report) {
  DeviceRuntime& rt = deviceRuntime();
  std::vector<std::shared_ptr<Prepared>> prepared;
  auto undo = [&](const Status& st) {
    for (auto& p : prepared) {
      for (DeviceEvent e : p->ready) rt.destroyEvent(e);
      openAll(*p);  // gates already queued must not hold their streams forever
    }
    return st;
  };
  std::vector<Communicator::DeviceBatch> missing;
  for (StreamBatch& b : batches) {
    if (b.comm->readyForDevice(b.calls)) continue;
    drain(*b.comm);
    missing.push_back({b.comm, &b.calls});
  }
  // Together: ranks of one group sharing this thread connect to each other.
  TUTTI_RETURN_IF_ERROR(Communicator::reserveForDevice(missing));
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
  for (size_t i = 0; i < prepared.size(); ++i) {
    auto p = prepared[i];
    batches[i].background->post([p, report] { runBatch(*p, report); });
  }
  return Status::Ok();
}

}  // namespace tutti
