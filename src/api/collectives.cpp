// The collective and point-to-point entry points: check every argument, say
// which one is wrong, then hand the call to the group/executor machinery.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "src/api/api_guard.h"
#include "src/api/stream_calls.h"
#include "src/comm/group.h"

using namespace tutti;

namespace {

// The checks are cheap tests inlined into every entry point; their messages
// are built apart, and only for a failure: a small call's time is its
// bookkeeping's.

// What is wrong with a call's buffers and count. A buffer holds `sendFactor`
// (or `recvFactor`) times `count` elements (nranks for gathered buffers). No
// buffer may exceed PTRDIFF_MAX bytes (pointer differences inside it must be
// defined) nor run past the end of the address space.
enum class DataFault { kNone, kDataType, kTooLarge, kNullSend, kNullRecv, kSendWraps, kRecvWraps };

struct DataCheck {
  const void* send;
  const void* recv;
  size_t count;
  const char* countName;
  int dtype;
  bool needSend, needRecv;
  size_t sendFactor, recvFactor;

  DataFault fault() const {
    if (!validDataType(dtype)) return DataFault::kDataType;
    const size_t es = dtypeSize(static_cast<DataType>(dtype));
    const size_t limit = static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max());
    if (count > limit / es / factor()) return DataFault::kTooLarge;
    if (count > 0 && needSend && !send) return DataFault::kNullSend;
    if (count > 0 && needRecv && !recv) return DataFault::kNullRecv;
    auto wraps = [](const void* p, size_t bytes) {
      return p && reinterpret_cast<uintptr_t>(p) > std::numeric_limits<uintptr_t>::max() - bytes;
    };
    if (needSend && wraps(send, count * es * sendFactor)) return DataFault::kSendWraps;
    if (needRecv && wraps(recv, count * es * recvFactor)) return DataFault::kRecvWraps;
    return DataFault::kNone;
  }
  size_t factor() const { return sendFactor > recvFactor ? sendFactor : recvFactor; }
};

[[gnu::cold, gnu::noinline]] Status describe(const DataCheck& d, DataFault fault) {
  const std::string count = std::string(d.countName) + " " + std::to_string(d.count);
  switch (fault) {
    case DataFault::kNone:
      break;
    case DataFault::kDataType:
      return InvalidArgument("invalid datatype " + std::to_string(d.dtype) + " (valid: 0.." +
                             std::to_string(kNumDataTypes - 1) + ")");
    case DataFault::kTooLarge:
      return InvalidArgument(count + (d.factor() > 1 ? " x " + std::to_string(d.factor()) + " ranks" : "") + " x " +
                             std::to_string(dtypeSize(static_cast<DataType>(d.dtype))) +
                             "-byte elements exceeds PTRDIFF_MAX bytes");
    case DataFault::kNullSend:
      return InvalidArgument("sendbuff is NULL with count > 0");
    case DataFault::kNullRecv:
      return InvalidArgument("recvbuff is NULL with count > 0");
    case DataFault::kSendWraps:
    case DataFault::kRecvWraps:
      return InvalidArgument(std::string(fault == DataFault::kSendWraps ? "sendbuff" : "recvbuff") + " + " + count +
                             " elements runs past the end of the address space");
  }
  return Status::Ok();
}

inline Status checkData(const void* send, const void* recv, size_t count, const char* countName, int dtype,
                        bool needSend, bool needRecv, size_t sendFactor, size_t recvFactor) {
  const DataCheck d{send, recv, count, countName, dtype, needSend, needRecv, sendFactor, recvFactor};
  const DataFault fault = d.fault();
  return fault == DataFault::kNone ? Status::Ok() : describe(d, fault);
}

[[gnu::cold, gnu::noinline]] Status opError(int op) {
  return InvalidArgument("invalid reduction op " + std::to_string(op) + " (valid: 0.." +
                         std::to_string(kNumRedOps - 1) + ")");
}

inline Status checkOp(int op) { return validRedOp(op) ? Status::Ok() : opError(op); }

[[gnu::cold, gnu::noinline]] Status rankError(const Communicator& c, int r, const char* what) {
  return InvalidArgument(std::string(what) + " " + std::to_string(r) + " is out of range [0, " +
                         std::to_string(c.size()) + ")");
}

inline Status checkRank(const Communicator& c, int r, const char* what) {
  return r >= 0 && r < c.size() ? Status::Ok() : rankError(c, r, what);
}

CollectiveArgs makeArgs(Collective coll, const void* send, void* recv, size_t count, int dtype,
                        int op, int root) {
  CollectiveArgs a;
  a.collective = coll;
  a.input = send;
  a.output = recv;
  a.count = count;
  a.dtype = static_cast<DataType>(dtype);
  a.op = static_cast<RedOp>(op);
  a.root = root;
  return a;
}

// Queues the call in the open group, queues device buffers' work on the
// stream, runs host buffers' now, or (non-blocking communicators) hands it
// to the background thread.
// The arguments come by reference: a copy passed by value is written field by
// field and read back whole, a store-forwarding stall on every small call.
Status dispatch(tuttiComm_t comm, Communicator& c, CollectiveArgs&& args, const char* api,
                void* stream) {
  if (comm->finalized.load()) return InvalidUsage("the communicator was finalized");
  TUTTI_RETURN_IF_ERROR(buffersOnDevice(c, args.input, args.output, dtypeSize(args.dtype), &args.onDevice));
  args.stream = stream;
  if (groupActive()) return submit(&c, args);
  if (args.onDevice) {
    std::vector<StreamBatch> batch{{&c, &comm->background.worker(), {args}}};
    return enqueueDeviceCalls(batch, api);
  }
  if (comm->settings.blocking) {
    comm->background.drain();  // earlier device calls come first on every rank
    return submit(&c, args);
  }
  runInBackground(comm, api, [&c, args] { return submit(&c, args); });
  return inProgress();
}

// A group's device-buffer calls, one batch per communicator. A communicator
// whose calls mix host and device buffers is refused: the two halves would
// run apart, and grouped sends and receives must run together.
Result<std::vector<StreamBatch>> splitDeviceCalls(const GroupCalls& calls) {
  std::vector<StreamBatch> batches;
  for (const auto& call : calls) {
    for (const auto& other : calls)
      if (other.comm == call.comm && other.args.onDevice != call.args.onDevice)
        return InvalidUsage("the group mixes host and device buffers on the communicator of rank " +
                            std::to_string(call.comm->rank()) + ": use one kind per group");
    if (!call.args.onDevice) continue;
    StreamBatch* batch = nullptr;
    for (auto& b : batches)
      if (b.comm == call.comm) batch = &b;
    if (!batch) batch = &batches.emplace_back(StreamBatch{call.comm, &call.comm->apiHandle()->background.worker(), {}});
    batch->calls.push_back(call.args);
  }
  return batches;
}

}  // namespace

extern "C" {

tuttiResult_t tuttiAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm,
                             void* stream) {
  return guardedCall(comm, "tuttiAllReduce", [&](Communicator& c) -> Status {
    TUTTI_RETURN_IF_ERROR(checkData(sendbuff, recvbuff, count, "count", datatype, true, true, 1, 1));
    TUTTI_RETURN_IF_ERROR(checkOp(op));
    return dispatch(comm, c, makeArgs(Collective::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0), "tuttiAllReduce", stream);
  });
}

tuttiResult_t tuttiAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             tuttiDataType_t datatype, tuttiComm_t comm, void* stream) {
  return guardedCall(comm, "tuttiAllGather", [&](Communicator& c) -> Status {
    TUTTI_RETURN_IF_ERROR(
        checkData(sendbuff, recvbuff, sendcount, "sendcount", datatype, true, true, 1, c.size()));
    return dispatch(comm, c, makeArgs(Collective::kAllGather, sendbuff, recvbuff, sendcount, datatype,
                               0, 0), "tuttiAllGather", stream);
  });
}

tuttiResult_t tuttiBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             tuttiDataType_t datatype, int root, tuttiComm_t comm, void* stream) {
  return guardedCall(comm, "tuttiBroadcast", [&](Communicator& c) -> Status {
    TUTTI_RETURN_IF_ERROR(checkRank(c, root, "root"));
    TUTTI_RETURN_IF_ERROR(
        checkData(sendbuff, recvbuff, count, "count", datatype, c.rank() == root, true, 1, 1));
    return dispatch(comm, c, makeArgs(Collective::kBroadcast, sendbuff, recvbuff, count, datatype, 0, root), "tuttiBroadcast", stream);
  });
}

tuttiResult_t tuttiReduce(const void* sendbuff, void* recvbuff, size_t count,
                          tuttiDataType_t datatype, tuttiRedOp_t op, int root, tuttiComm_t comm,
                          void* stream) {
  return guardedCall(comm, "tuttiReduce", [&](Communicator& c) -> Status {
    TUTTI_RETURN_IF_ERROR(checkRank(c, root, "root"));
    TUTTI_RETURN_IF_ERROR(
        checkData(sendbuff, recvbuff, count, "count", datatype, true, c.rank() == root, 1, 1));
    TUTTI_RETURN_IF_ERROR(checkOp(op));
    return dispatch(comm, c, makeArgs(Collective::kReduce, sendbuff, recvbuff, count, datatype, op, root), "tuttiReduce", stream);
  });
}

tuttiResult_t tuttiReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm,
                                 void* stream) {
  return guardedCall(comm, "tuttiReduceScatter", [&](Communicator& c) -> Status {
    TUTTI_RETURN_IF_ERROR(
        checkData(sendbuff, recvbuff, recvcount, "recvcount", datatype, true, true, c.size(), 1));
    TUTTI_RETURN_IF_ERROR(checkOp(op));
    return dispatch(comm, c, makeArgs(Collective::kReduceScatter, sendbuff, recvbuff, recvcount,
                               datatype, op, 0), "tuttiReduceScatter", stream);
  });
}

tuttiResult_t tuttiBarrier(tuttiComm_t comm, void* stream) {
  return guardedCall(comm, "tuttiBarrier", [&](Communicator& c) -> Status {
    // An all-reduce of one byte: nobody leaves before everybody arrived.
    uint8_t* token = c.barrierBytes();
    return dispatch(comm, c, makeArgs(Collective::kAllReduce, &token[0], &token[1], 1, tuttiUint8,
                                      tuttiMax, 0), "tuttiBarrier", stream);
  });
}

tuttiResult_t tuttiSend(const void* sendbuff, size_t count, tuttiDataType_t datatype, int peer,
                        tuttiComm_t comm, void* stream) {
  return guardedCall(comm, "tuttiSend", [&](Communicator& c) -> Status {
    TUTTI_RETURN_IF_ERROR(checkRank(c, peer, "peer"));
    TUTTI_RETURN_IF_ERROR(checkData(sendbuff, nullptr, count, "count", datatype, true, false, 1, 1));
    return dispatch(comm, c, makeArgs(Collective::kSend, sendbuff, nullptr, count, datatype, 0, peer), "tuttiSend", stream);
  });
}

tuttiResult_t tuttiRecv(void* recvbuff, size_t count, tuttiDataType_t datatype, int peer,
                        tuttiComm_t comm, void* stream) {
  return guardedCall(comm, "tuttiRecv", [&](Communicator& c) -> Status {
    TUTTI_RETURN_IF_ERROR(checkRank(c, peer, "peer"));
    TUTTI_RETURN_IF_ERROR(checkData(nullptr, recvbuff, count, "count", datatype, false, true, 1, 1));
    return dispatch(comm, c, makeArgs(Collective::kRecv, nullptr, recvbuff, count, datatype, 0, peer), "tuttiRecv", stream);
  });
}

tuttiResult_t tuttiGroupStart(void) {
  groupStart();
  return tuttiSuccess;
}

tuttiResult_t tuttiGroupEnd(void) {
  auto closed = groupEnd();
  if (!closed.ok()) return report(nullptr, "tuttiGroupEnd", closed.status());
  std::shared_ptr<GroupCalls> all = closed.value();
  if (!all || all->empty()) return tuttiSuccess;
  auto split = splitDeviceCalls(*all);
  if (!split.ok()) return report(nullptr, "tuttiGroupEnd", split.status());
  if (!split->empty()) {
    Status st = enqueueDeviceCalls(*split, "tuttiGroupEnd");
    if (!st.ok()) return report(nullptr, "tuttiGroupEnd", st);
  }
  auto calls = std::make_shared<GroupCalls>();
  for (auto& call : *all)
    if (!call.args.onDevice) calls->push_back(call);
  if (calls->empty()) return tuttiSuccess;
  Communicator* first = calls->front().comm;
  bool oneComm = true;
  for (const auto& call : *calls) oneComm &= call.comm == first;
  tuttiComm_t handle = first->apiHandle();
  if (oneComm && handle && !handle->settings.blocking) {
    runInBackground(handle, "tuttiGroupEnd", [calls] {
      std::vector<Communicator*> failed;
      return runGroup(*calls, &failed);
    });
    return tuttiInProgress;
  }
  // Across communicators the group runs here, after each one's earlier
  // background calls.
  for (const auto& call : *calls)
    if (call.comm->apiHandle()) call.comm->apiHandle()->background.drain();
  std::vector<Communicator*> failed;
  Status st = runGroup(*calls, &failed);
  if (st.ok()) return tuttiSuccess;
  std::string message = "tuttiGroupEnd: " + st.message();
  setThreadLastError(message);
  for (Communicator* c : failed) c->setLastError(message);
  TUTTI_WARN(kSubsysAll, "%s", message.c_str());
  return toResult(st.code());
}

}  // extern "C"
