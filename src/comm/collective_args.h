// One call's parameters, as the API layer checked them: what the
// communicator plans, the host block runs and a group queues.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"
#include "src/common/call_record.h"
#include "src/plan/plan.h"
#include "transport/transport.h"

namespace tutti {

struct CollectiveArgs {
  Collective collective = Collective::kAllReduce;
  const void* input = nullptr;
  void* output = nullptr;
  size_t count = 0;
  DataType dtype = DataType::kFloat32;
  RedOp op = RedOp::kSum;
  int root = 0;  // broadcast, reduce; the peer for send and recv
  bool onDevice = false;        // buffers in device memory: stream-ordered
  DeviceStream stream = nullptr;  // the caller's cudaStream_t (device buffers only)
  bool internal = false;  // tutti's own (TUTTI_CHECK_CALLS): no call number, not recorded
  Memory memory() const { return onDevice ? Memory::kDevice : Memory::kHost; }
  // What tells this call from another's, under call number `sequence`.
  CallSignature signature(uint64_t sequence) const {
    return {sequence, count, static_cast<int32_t>(collective), static_cast<int32_t>(dtype), static_cast<int32_t>(op),
            root};
  }
};

}  // namespace tutti
