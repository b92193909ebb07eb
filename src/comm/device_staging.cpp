#include "src/comm/device_staging.h"

#include <algorithm>

#include "src/comm/group.h"

namespace tutti {

BufferRows inputRows(Collective c, int nranks, size_t count) {
  if (c == Collective::kReduceScatter) return {static_cast<size_t>(nranks), count};
  return {1, count};
}

BufferRows outputRows(Collective c, int nranks, size_t count) {
  if (c == Collective::kAllGather) return {static_cast<size_t>(nranks), count};
  return {1, count};
}

namespace {

// Which buffers this rank's part of the call reads and writes.
bool readsInput(const CollectiveArgs& a, int rank) {
  if (a.collective == Collective::kRecv) return false;
  if (a.collective == Collective::kBroadcast && rank != a.root) return false;
  return a.input != nullptr;
}
bool writesOutput(const CollectiveArgs& a, int rank) {
  if (a.collective == Collective::kSend) return false;
  if (a.collective == Collective::kReduce && rank != a.root) return false;
  return a.output != nullptr;
}

size_t maxRows(const CollectiveArgs& a, int nranks) {
  return std::max(inputRows(a.collective, nranks, a.count).rows,
                  outputRows(a.collective, nranks, a.count).rows);
}

// A group's arena: each call's input and output regions (offsets into
// *inAt and *outAt when given), and the bytes in all.
size_t arenaLayout(const std::vector<CollectiveArgs>& calls, int nranks, std::vector<size_t>* inAt,
                   std::vector<size_t>* outAt) {
  auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  size_t total = 0;
  for (const CollectiveArgs& c : calls) {
    const size_t es = dtypeSize(c.dtype);
    if (inAt) inAt->push_back(total);
    total += align(inputRows(c.collective, nranks, c.count).rows * c.count * es);
    if (outAt) outAt->push_back(total);
    total += align(outputRows(c.collective, nranks, c.count).rows * c.count * es);
  }
  return std::max<size_t>(total, 256);
}

}  // namespace

DeviceStaging::DeviceStaging(DeviceRuntime& runtime, size_t pieceBytes)
    : runtime_(runtime), pieceBytes_(pieceBytes) {}

DeviceStaging::~DeviceStaging() {
  if (haveStream_) {
    (void)runtime_.synchronize(stream_);
    for (DeviceEvent e : inReady_)
      if (e) runtime_.destroyEvent(e);
    runtime_.destroyStream(stream_);
  }
  for (Pinned* p : {&in_[0], &in_[1], &out_[0], &out_[1], &arena_})
    if (p->data) runtime_.freePinned(p->data);
}

Status DeviceStaging::ensure(Pinned& buffer, size_t bytes) {
  if (buffer.bytes >= bytes) return Status::Ok();
  if (buffer.data) {
    TUTTI_RETURN_IF_ERROR(runtime_.synchronize(stream_));
    runtime_.freePinned(buffer.data);
    buffer = {};
  }
  TUTTI_ASSIGN_OR_RETURN(buffer.data, runtime_.allocPinned(bytes));
  buffer.bytes = bytes;
  return Status::Ok();
}

size_t DeviceStaging::pieceElems(const CollectiveArgs& call, int nranks) const {
  return std::max<size_t>(1, pieceBytes_ / (dtypeSize(call.dtype) * maxRows(call, nranks)));
}

size_t DeviceStaging::stageBytes(const CollectiveArgs& call, int nranks) const {
  return pieceElems(call, nranks) * dtypeSize(call.dtype) * maxRows(call, nranks);
}

bool DeviceStaging::reserved(const std::vector<CollectiveArgs>& calls, int nranks) const {
  if (!haveStream_ || !inReady_[1]) return false;
  if (calls.size() != 1) return arena_.bytes >= arenaLayout(calls, nranks, nullptr, nullptr);
  const size_t bytes = stageBytes(calls.front(), nranks);
  for (const Pinned* p : {&in_[0], &in_[1], &out_[0], &out_[1]})
    if (p->bytes < bytes) return false;
  return true;
}

Status DeviceStaging::reserve(const std::vector<CollectiveArgs>& calls, int nranks) {
  if (!haveStream_) {
    TUTTI_ASSIGN_OR_RETURN(stream_, runtime_.createStream());
    haveStream_ = true;
  }
  for (DeviceEvent& e : inReady_)
    if (!e) {
      TUTTI_ASSIGN_OR_RETURN(e, runtime_.createEvent());
    }
  if (calls.size() != 1) return ensure(arena_, arenaLayout(calls, nranks, nullptr, nullptr));
  const size_t bytes = stageBytes(calls.front(), nranks);
  for (Pinned* p : {&in_[0], &in_[1], &out_[0], &out_[1]}) TUTTI_RETURN_IF_ERROR(ensure(*p, bytes));
  return Status::Ok();
}

Status DeviceStaging::copyIn(const CollectiveArgs& call, int nranks, size_t offset, size_t n,
                             void* stage) {
  const size_t es = dtypeSize(call.dtype);
  BufferRows r = inputRows(call.collective, nranks, call.count);
  return runtime_.copy2DAsync(stage, n * es, static_cast<const char*>(call.input) + offset * es,
                              r.pitch * es, n * es, r.rows, stream_);
}

Status DeviceStaging::copyOut(const CollectiveArgs& call, int nranks, size_t offset, size_t n,
                              const void* stage) {
  const size_t es = dtypeSize(call.dtype);
  BufferRows r = outputRows(call.collective, nranks, call.count);
  return runtime_.copy2DAsync(static_cast<char*>(call.output) + offset * es, r.pitch * es, stage,
                              n * es, n * es, r.rows, stream_);
}

Status DeviceStaging::run(Communicator& comm, std::vector<CollectiveArgs>& calls) {
  if (!reserved(calls, comm.size())) return InternalError("staging buffers were not reserved");
  if (calls.size() == 1) return runPipelined(comm, calls.front());
  return runWhole(comm, calls);
}

// Piece k's copy in overlaps piece k-1's collective, and its copy out the
// collective of piece k+1. One in-order stream keeps the two stages safe:
// piece k+2's copy in is queued behind piece k's copy out, so once it is
// done, so is the copy that last read that stage's output.
Status DeviceStaging::runPipelined(Communicator& comm, const CollectiveArgs& call) {
  const int nranks = comm.size();
  const int rank = comm.rank();
  const size_t pieceElems = this->pieceElems(call, nranks);
  const size_t pieces = call.count == 0 ? 1 : (call.count + pieceElems - 1) / pieceElems;
  const bool in = readsInput(call, rank), out = writesOutput(call, rank);
  auto stageIn = [&](size_t k) -> Status {
    const size_t off = k * pieceElems, n = std::min(pieceElems, call.count - off);
    if (in && n > 0) TUTTI_RETURN_IF_ERROR(copyIn(call, nranks, off, n, in_[k % 2].data));
    return runtime_.recordInto(inReady_[k % 2], stream_);
  };
  Status st = stageIn(0);
  for (size_t k = 0; k < pieces && st.ok(); ++k) {
    const size_t off = k * pieceElems, n = std::min(pieceElems, call.count - off);
    st = runtime_.waitEvent(inReady_[k % 2]);  // waited on before piece k+2 records it again
    if (st.ok() && k + 1 < pieces) st = stageIn(k + 1);
    if (!st.ok()) break;
    CollectiveArgs piece = call;
    piece.onDevice = false;
    piece.count = n;
    piece.input = in ? in_[k % 2].data : nullptr;
    piece.output = out ? out_[k % 2].data : nullptr;
    st = submit(&comm, piece);
    if (st.ok() && out && n > 0) st = copyOut(call, nranks, off, n, out_[k % 2].data);
  }
  // Nothing may still be copying from or into the stages when this returns.
  Status done = runtime_.synchronize(stream_);
  return st.ok() ? done : st;
}

// A group's calls run together (grouped sends and receives must), so each
// gets its own input and output region of one arena.
Status DeviceStaging::runWhole(Communicator& comm, std::vector<CollectiveArgs>& calls) {
  const int nranks = comm.size();
  const int rank = comm.rank();
  std::vector<size_t> inAt, outAt;
  arenaLayout(calls, nranks, &inAt, &outAt);
  char* arena = static_cast<char*>(arena_.data);
  GroupCalls staged;
  for (size_t i = 0; i < calls.size(); ++i) {
    const CollectiveArgs& c = calls[i];
    CollectiveArgs s = c;
    s.onDevice = false;
    s.input = readsInput(c, rank) ? arena + inAt[i] : nullptr;
    s.output = writesOutput(c, rank) ? arena + outAt[i] : nullptr;
    if (s.input && c.count > 0) TUTTI_RETURN_IF_ERROR(copyIn(c, nranks, 0, c.count, arena + inAt[i]));
    staged.push_back({&comm, s, {}});
  }
  TUTTI_RETURN_IF_ERROR(runtime_.synchronize(stream_));
  std::vector<Communicator*> failed;
  TUTTI_RETURN_IF_ERROR(runGroup(staged, &failed));
  for (size_t i = 0; i < calls.size(); ++i)
    if (staged[i].args.output && calls[i].count > 0)
      TUTTI_RETURN_IF_ERROR(copyOut(calls[i], nranks, 0, calls[i].count, staged[i].args.output));
  return runtime_.synchronize(stream_);
}

}  // namespace tutti
