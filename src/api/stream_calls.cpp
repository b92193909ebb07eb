#include "src/api/stream_calls.h"

#include <cstdint>
#include <cstdio>

#include "src/api/api_guard.h"

namespace tutti {

namespace {

std::string whereIs(const PointerInfo& p) {
  return p.onDevice ? "device memory (device " + std::to_string(p.device) + ")" : "host memory";
}

}  // namespace

Status askWhereBuffersLive(DeviceRuntime& rt, const Communicator& comm, const void* sendbuff,
                           const void* recvbuff, size_t elemSize, bool* onDevice) {
  PointerInfo send = rt.pointerInfo(sendbuff), recv = rt.pointerInfo(recvbuff);
  if (sendbuff && recvbuff && send.onDevice != recv.onDevice)
    return InvalidArgument("sendbuff is " + whereIs(send) + " but recvbuff is " + whereIs(recv) +
                           ": a call's buffers must all be device memory or all host memory");
  *onDevice = send.onDevice || recv.onDevice;
  if (!*onDevice) return Status::Ok();
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
  // A GPU's kernel faults on a misaligned element, and the fault ends the
  // process's CUDA context: refuse it here instead.
  for (const void* b : {sendbuff, recvbuff})
    if (reinterpret_cast<uintptr_t>(b) % elemSize != 0) {
      char where[32];
      snprintf(where, sizeof(where), "%p", b);
      return InvalidArgument(std::string(b == sendbuff ? "sendbuff " : "recvbuff ") + where +
                             " is not aligned to its " + std::to_string(elemSize) +
                             "-byte elements: a GPU cannot read misaligned device memory");
    }
  return Status::Ok();
}

Status enqueueDeviceCalls(std::vector<StreamBatch>& batches, const char* api) {
  auto drain = [](Communicator& c) { c.apiHandle()->background.drain(); };
  auto failed = [api](Communicator& c, const Status& st) { report(c.apiHandle(), api, st); };
  return enqueueOnStreams(batches, drain, failed);
}

}  // namespace tutti
