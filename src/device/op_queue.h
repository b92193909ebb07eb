// The host's end of the op queue (kernels/op_queue.h): the caller's thread
// launches a worker on tutti's stream with each batch of device calls; the
// background thread posts the batch's reductions and copies to it and reads
// how far it got, with no CUDA call (see kernels/op_queue.h for why).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/op_queue.h"
#include "src/common/host_buffer.h"
#include "src/device/device_runtime.h"

namespace tutti {

class OpQueue {
 public:
  // On the current device, for `stream`; `abort` ends a wait for the
  // worker, and one that sees no op finish for `timeoutSeconds` fails.
  // `sharers`: the ranks whose workers share the device (its grid);
  // `leanWorker`: which worker kernel (DeviceRuntime::launchWorker).
  static Result<std::unique_ptr<OpQueue>> create(DeviceRuntime& runtime, DeviceStream stream,
                                                 const std::atomic<bool>* abort, double timeoutSeconds = 300,
                                                 int sharers = 1, bool leanWorker = false);
  // The stream must be idle (no worker waiting for a stop).
  ~OpQueue();
  OpQueue(const OpQueue&) = delete;
  OpQueue& operator=(const OpQueue&) = delete;

  // The caller's thread: a worker that starts once `inputsReady` are
  // reached; every launched worker must get a stop(). `number` is the
  // worker's, counted from 1, for waitForStart().
  Status launchWorker(const std::vector<DeviceEvent>& inputsReady, uint64_t* number = nullptr);

  // The background thread: waits until worker `number` began (its inputs
  // are ready: the caller's stream may hold it back for as long as its own
  // work runs, so only an abort ends this wait). post() waits while the
  // queue is full.
  Status waitForStart(uint64_t number);
  Status post(const QueuedOp& op);
  // Ops posted so far, and of them, the ones the device finished.
  uint64_t posted() const { return posted_; }
  uint64_t done() const { return __atomic_load_n(&shared_->done, __ATOMIC_ACQUIRE); }
  // Waits until the device finished every op posted.
  Status drain() { return waitForOps(posted_); }
  // Ends the worker, after what was posted.
  Status stop();

 private:
  OpQueue(DeviceRuntime& runtime, DeviceStream stream, const std::atomic<bool>* abort, double timeoutSeconds)
      : runtime_(runtime), stream_(stream), abort_(abort), timeoutSeconds_(timeoutSeconds) {}
  // Waits until the device's `counter` reaches `target`; `bounded`: fails
  // once the counter stood still for the timeout.
  Status waitFor(const uint64_t& counter, uint64_t target, bool bounded);
  // Waits until the worker finished `target` ops (bounded).
  Status waitForOps(uint64_t target);
  Status refused() const;

  DeviceRuntime& runtime_;
  DeviceStream stream_;
  const std::atomic<bool>* abort_;
  double timeoutSeconds_;
  bool stalled_ = false;  // a wait for ops timed out: the device stopped taking them
  HostBuffer memory_;
  OpQueueShared* shared_ = nullptr;  // in memory_, page-locked and mapped
  void* sharedOnDevice_ = nullptr;
  void* scratch_ = nullptr;  // device memory: the workers' grid barrier (and mailbox)
  unsigned blocks_ = 1;
  bool lean_ = false;
  uint64_t posted_ = 0;
  std::atomic<uint64_t> launched_{0};
};

}  // namespace tutti
