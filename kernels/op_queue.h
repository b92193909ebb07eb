// The queue through which tutti's background thread hands reductions and
// copies to a worker kernel that the caller's thread launched with the
// call. The background thread then makes no CUDA call while a collective
// runs: on an H200 a kernel launch, or an event made or destroyed, waits
// while another thread of the process copies to pageable memory behind a
// stream gate (torch's .cpu() right after a collective), and that copy
// waits for the collective (bench/results/gpu.md).
//
// The queue lives in page-locked host memory mapped into the device. The
// host writes an op, then `posted` (release); the worker's blocks run ops
// in order, each op over the whole grid, with a barrier between them, and
// then write `done` (release). A kStop op ends the worker. Each worker
// counts itself in `started` as it begins, once the caller's inputs are
// ready, so a call's time is counted from then, as the caller's stream sees it.
#pragma once

#include <cstdint>

namespace tutti {

enum class QueuedOpKind : uint32_t { kReduce = 0, kDivide = 1, kCopy = 2, kStop = 3 };

struct QueuedOp {
  void* dst;
  const void* a;
  const void* b;      // reduce only
  uint64_t count;     // elements (bytes for a copy)
  uint32_t kind;      // QueuedOpKind
  int32_t dtype;      // DataType
  int32_t op;         // RedOp
  int32_t divisor;
};

static_assert(sizeof(QueuedOp) % sizeof(uint64_t) == 0, "the worker reads an op word by word");

constexpr uint32_t kOpQueueSlots = 1024;

struct OpQueueShared {
  QueuedOp ops[kOpQueueSlots];  // op i in ops[i % kOpQueueSlots]
  alignas(64) uint64_t posted;  // ops [0, posted) are written (host)
  alignas(64) uint64_t done;    // ops [0, done) are finished (device)
  alignas(64) uint64_t failed;  // an op the device refused, plus 1 (0: none)
  alignas(64) uint64_t started;  // workers that began: their inputs are ready (device)
  alignas(64) uint64_t abandoned;  // the host gave up (an abort): workers leave (host)
};

}  // namespace tutti
