#include "tests/collectives/collective_cases.h"

#include <algorithm>
#include <cstring>

#include "tests/harness/reference.h"

namespace tutti_test {

const char* collLabel(Coll c) {
  switch (c) {
    case Coll::kAllReduce: return "allreduce";
    case Coll::kReduce: return "reduce";
    case Coll::kReduceScatter: return "reducescatter";
    case Coll::kAllGather: return "allgather";
    case Coll::kBroadcast: return "broadcast";
    case Coll::kSendRecv: return "sendrecv";
    case Coll::kAllToAll: return "alltoall";
  }
  return "?";
}

namespace {

// Buffers reused across cases (growing only): large cases do not pay for
// fresh pages every time. One set per thread: ranks may be threads.
std::vector<unsigned char>& scratch(int which, size_t bytes) {
  static thread_local std::vector<unsigned char> buffers[3];
  if (buffers[which].size() < bytes) buffers[which].resize(bytes);
  return buffers[which];
}

std::string describe(const Case& c, int rank) {
  return std::string(collLabel(c.coll)) + " " + typeLabel(c.type) + " " + opLabel(c.op) +
         " count " + std::to_string(c.count) + (c.inPlace ? " in-place" : " out-of-place") +
         " root " + std::to_string(c.root) + " on rank " + std::to_string(rank);
}

}  // namespace

std::string runCase(tuttiComm_t comm, int rank, int n, const Case& c, CaseDevice* device) {
  const size_t es = elemSize(c.type);
  const size_t count = c.count;
  size_t inElems = count, outElems = count;
  switch (c.coll) {
    case Coll::kReduceScatter: inElems = count * n; break;
    case Coll::kAllGather: outElems = count * n; break;
    case Coll::kAllToAll: inElems = outElems = count * n; break;
    default: break;
  }
  // Canaries after the output catch writes past its end.
  const size_t canary = 64;
  unsigned char* in = scratch(0, inElems * es + canary).data();
  unsigned char* out = scratch(1, (outElems + inElems) * es + canary).data();
  unsigned char* want = scratch(2, outElems * es + canary).data();
  std::memset(out + outElems * es, 0xA5, canary);

  // The send buffer: separate, or the piece of the output it lives in.
  unsigned char* send = in;
  if (c.inPlace) {
    if (c.coll == Coll::kAllGather) send = out + rank * count * es;
    else send = out;
  }
  // Point-to-point calls have no in-place form.
  if (c.inPlace && (c.coll == Coll::kAllToAll || c.coll == Coll::kSendRecv)) return "";
  fillInput(send, inElems, c.type, c.op, rank, 0, c.seed);
  unsigned char* recv = out;
  if (c.inPlace && c.coll == Coll::kReduceScatter) recv = out + rank * count * es;
  // The output's canary, and an in-place reduce-scatter's input (it holds recv).
  const size_t outBytes = std::max(outElems * es + canary, inElems * es);
  // On a device the call gets device images of in and out, and out comes back after.
  void* stream = nullptr;
  unsigned char* hostOut = out;
  if (device) {
    auto* din = static_cast<unsigned char*>(device->buffer(0, inElems * es + canary));
    auto* dout = static_cast<unsigned char*>(device->buffer(1, (outElems + inElems) * es + canary));
    device->upload(din, in, inElems * es);
    device->upload(dout, out, outBytes);
    send = send == in ? din : dout + (send - out);
    recv = dout + (recv - out);
    out = dout;
    stream = device->stream();
  }

  tuttiResult_t r = tuttiSuccess;
  switch (c.coll) {
    case Coll::kAllReduce:
      r = tuttiAllReduce(send, recv, count, c.type, c.op, comm, stream);
      break;
    case Coll::kReduce:
      r = tuttiReduce(send, recv, count, c.type, c.op, c.root, comm, stream);
      break;
    case Coll::kReduceScatter:
      r = tuttiReduceScatter(send, recv, count, c.type, c.op, comm, stream);
      break;
    case Coll::kAllGather:
      r = tuttiAllGather(send, recv, count, c.type, comm, stream);
      break;
    case Coll::kBroadcast:
      r = tuttiBroadcast(send, recv, count, c.type, c.root, comm, stream);
      break;
    case Coll::kSendRecv:
      tuttiGroupStart();
      tuttiSend(send, count, c.type, (rank + 1) % n, comm, stream);
      tuttiRecv(recv, count, c.type, (rank + n - 1) % n, comm, stream);
      r = tuttiGroupEnd();
      break;
    case Coll::kAllToAll:
      tuttiGroupStart();
      for (int p = 0; p < n; ++p) {
        tuttiSend(send + p * count * es, count, c.type, p, comm, stream);
        tuttiRecv(recv + p * count * es, count, c.type, p, comm, stream);
      }
      r = tuttiGroupEnd();
      break;
  }
  if (r != tuttiSuccess)
    return describe(c, rank) + ": returned " + tuttiGetErrorString(r) + ": " + tuttiGetLastError(comm);
  if (device) {
    std::string failed = device->synchronize();
    if (!failed.empty()) return describe(c, rank) + ": " + failed;
    tuttiResult_t async = tuttiSuccess;
    tuttiCommGetAsyncError(comm, &async);
    if (async != tuttiSuccess)
      return describe(c, rank) + ": async error " + tuttiGetErrorString(async) + ": " +
             tuttiGetLastError(comm);
    device->download(hostOut, out, outBytes);
    recv = hostOut + (recv - out);
    out = hostOut;
  }

  // What this rank's output must hold.
  switch (c.coll) {
    case Coll::kAllReduce:
      fillReduced(want, count, c.type, c.op, n, 0, c.seed);
      break;
    case Coll::kReduce:
      if (rank != c.root) return "";
      fillReduced(want, count, c.type, c.op, n, 0, c.seed);
      break;
    case Coll::kReduceScatter:
      fillReduced(want, count, c.type, c.op, n, rank * count, c.seed);
      break;
    case Coll::kAllGather:
      for (int p = 0; p < n; ++p) fillInput(want + p * count * es, count, c.type, c.op, p, 0, c.seed);
      break;
    case Coll::kBroadcast:
      fillInput(want, count, c.type, c.op, c.root, 0, c.seed);
      break;
    case Coll::kSendRecv:
      fillInput(want, count, c.type, c.op, (rank + n - 1) % n, 0, c.seed);
      break;
    case Coll::kAllToAll:
      for (int p = 0; p < n; ++p)
        fillInput(want + p * count * es, count, c.type, c.op, p, rank * count, c.seed);
      break;
  }
  std::string report;
  size_t bad = compareElements(recv, want, outElems, c.type, &report);
  if (bad) return describe(c, rank) + ": " + std::to_string(bad) + " wrong elements" + report;
  // (An in-place reduce-scatter's input extends past its output: no canary there.)
  if (c.coll != Coll::kReduceScatter || !c.inPlace) {
    for (size_t i = 0; i < canary; ++i)
      if (out[outElems * es + i] != 0xA5) return describe(c, rank) + ": wrote past the end of recvbuff";
  }
  return "";
}

std::string runEveryCase(tuttiComm_t comm, int rank, int nranks, const std::vector<size_t>& counts,
                         CaseDevice* device, uint64_t seed) {
  const tuttiDataType_t types[] = {tuttiInt8,  tuttiUint8,   tuttiInt32,   tuttiUint32,  tuttiInt64,
                                   tuttiUint64, tuttiFloat16, tuttiFloat32, tuttiFloat64, tuttiBfloat16};
  const tuttiRedOp_t ops[] = {tuttiSum, tuttiProd, tuttiMax, tuttiMin, tuttiAvg};
  for (Coll coll : {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter, Coll::kAllGather,
                    Coll::kBroadcast, Coll::kSendRecv, Coll::kAllToAll})
    for (tuttiDataType_t t : types)
      for (tuttiRedOp_t op : ops) {
        bool reduces = coll == Coll::kAllReduce || coll == Coll::kReduce || coll == Coll::kReduceScatter;
        if (!reduces && op != tuttiSum) continue;
        for (size_t count : counts)
          for (bool inPlace : {false, true}) {
            std::string err = runCase(comm, rank, nranks, {coll, t, op, count, inPlace, nranks - 1, seed++}, device);
            if (!err.empty()) return err;
          }
      }
  return "";
}

}  // namespace tutti_test
