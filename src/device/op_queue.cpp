#include "src/device/op_queue.h"

#include <chrono>
#include <thread>
#include <vector>

namespace tutti {

Result<std::unique_ptr<OpQueue>> OpQueue::create(DeviceRuntime& runtime, DeviceStream stream,
                                                 const std::atomic<bool>* abort, double timeoutSeconds,
                                                 int sharers, bool leanWorker) {
  std::unique_ptr<OpQueue> q(new OpQueue(runtime, stream, abort, timeoutSeconds));
  // Zeroed whole pages, as registration maps pages.
  TUTTI_ASSIGN_OR_RETURN(q->memory_, HostBuffer::allocate((sizeof(OpQueueShared) + 4095) / 4096 * 4096));
  auto mapped = runtime.registerHost(q->memory_.data(), q->memory_.size());
  if (!mapped.ok()) return mapped.status().withContext("mapping the op queue into the device");
  q->shared_ = reinterpret_cast<OpQueueShared*>(q->memory_.data());
  q->sharedOnDevice_ = *mapped;
  const size_t scratchBytes = runtime.workerScratchBytes();
  TUTTI_ASSIGN_OR_RETURN(q->scratch_, runtime.allocDevice(scratchBytes));
  // The barrier's count (and the mailbox's) starts at zero, once: it only grows after.
  const std::vector<uint8_t> zeros(scratchBytes, 0);
  TUTTI_RETURN_IF_ERROR(runtime.copyAsync(q->scratch_, zeros.data(), zeros.size(), stream));
  TUTTI_RETURN_IF_ERROR(runtime.synchronize(stream));
  q->blocks_ = runtime.workerBlocks(sharers);
  q->lean_ = leanWorker;
  return q;
}

OpQueue::~OpQueue() {
  if (scratch_) runtime_.freeDevice(scratch_);
  if (shared_) runtime_.unregisterHost(shared_);
}

Status OpQueue::launchWorker(const std::vector<DeviceEvent>& inputsReady, uint64_t* number) {
  for (DeviceEvent e : inputsReady)
    TUTTI_RETURN_IF_ERROR(runtime_.streamWaitEvent(stream_, e).withContext("tutti's stream waiting for the inputs"));
  TUTTI_RETURN_IF_ERROR(
      runtime_.launchWorker(sharedOnDevice_, scratch_, blocks_, lean_, stream_).withContext("launching tutti's worker kernel"));
  const uint64_t n = ++launched_;
  if (number) *number = n;
  return Status::Ok();
}

Status OpQueue::waitForStart(uint64_t number) { return waitFor(shared_->started, number, false); }

Status OpQueue::post(const QueuedOp& op) {
  if (posted_ - done() >= kOpQueueSlots) TUTTI_RETURN_IF_ERROR(waitForOps(posted_ - kOpQueueSlots + 1));
  shared_->ops[posted_ % kOpQueueSlots] = op;
  __atomic_store_n(&shared_->posted, ++posted_, __ATOMIC_RELEASE);
  return Status::Ok();
}

// A stop that cannot be posted (an abort while the queue was full), or
// after the device stopped taking ops, leaves the queue abandoned: this
// worker and every later one leave as soon as they run, so tutti's stream
// still drains, and no second timeout is waited out.
Status OpQueue::stop() {
  QueuedOp op{};
  op.kind = static_cast<uint32_t>(QueuedOpKind::kStop);
  Status st = stalled_ ? Status(Code::kTimeout, "the device stopped taking tutti's ops") : post(op);
  if (!st.ok()) {
    __atomic_store_n(&shared_->abandoned, uint64_t{1}, __ATOMIC_RELEASE);
    return st;
  }
  return waitForOps(posted_);
}

Status OpQueue::waitForOps(uint64_t target) {
  Status st = waitFor(shared_->done, target, true);
  stalled_ = st.code() == Code::kTimeout;
  return st;
}

// The device answers within microseconds once it runs the worker; before
// that it may be busy with the caller's earlier work for a long time.
Status OpQueue::waitFor(const uint64_t& counter, uint64_t target, bool bounded) {
  uint64_t seen = __atomic_load_n(&counter, __ATOMIC_ACQUIRE);
  uint64_t moved = seen;  // the count when it last moved, at `since`
  auto since = std::chrono::steady_clock::now();
  for (int spins = 0; seen < target; ++spins, seen = __atomic_load_n(&counter, __ATOMIC_ACQUIRE)) {
    if (abort_ && abort_->load(std::memory_order_relaxed))
      return InvalidUsage("the communicator was aborted while its device worker ran");
    if (spins < 1000) continue;
    std::this_thread::yield();
    if (!bounded || spins % 1024 != 0) continue;
    const auto now = std::chrono::steady_clock::now();
    if (seen != moved) {
      moved = seen;
      since = now;
    } else if (std::chrono::duration<double>(now - since).count() > timeoutSeconds_) {
      return Status(Code::kTimeout, "tutti's device worker finished " + std::to_string(seen) + " of " +
                                        std::to_string(target) + " ops and then none for " +
                                        std::to_string(static_cast<int>(timeoutSeconds_)) +
                                        " s (TUTTI_TIMEOUT): the device stopped taking them");
    }
  }
  return refused();
}

Status OpQueue::refused() const {
  const uint64_t failed = __atomic_load_n(&shared_->failed, __ATOMIC_ACQUIRE);
  if (failed == 0) return Status::Ok();
  return Status(Code::kCudaError, "the device refused op " + std::to_string(failed - 1) + " of tutti's worker");
}

}  // namespace tutti
