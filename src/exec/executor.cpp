#include "src/exec/executor.h"

#include <poll.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "src/common/doorbell.h"
#include "src/common/wake_word.h"
#include "src/exec/rank_order_sum.h"
#include "src/exec/verdicts.h"

namespace tutti {

namespace {

// A sleep on shared memory's limit: the peer wakes the sleeper when it
// moves; this bounds a wake-up missed, and the wait for an abort.
constexpr int kSharedMemorySleepUs = 1000;

// Elements in a chunk of `bytes` of data (a tag, if any, comes on top).
size_t chunkElems(const Work& w, size_t bytes) {
  const size_t n = bytes / dtypeSize(w.dtype);
  return n ? n : 1;
}

// Where one channel of one Work has got to.
struct Cursor {
  Work* work;
  const ChannelProgram* program;
  size_t chunk = 1;       // elements a chunk
  size_t phaseBegin = 0;  // steps [phaseBegin, phaseEnd): the phase it is in
  size_t phaseEnd = 0;
  size_t phase = 0;       // its index (ChannelProgram::phaseStarts)
  size_t iterations = 0;  // chunks in the phase's longest step
  size_t iteration = 0;
  size_t sentAhead = 0;   // chunks of the phase's first step sent (ChannelProgram::sendsAhead)
  bool leadGoesAhead = false;  // the phase's first step may send ahead (startPhase)
  size_t step = 0;
  SendConnection* send = nullptr;
  RecvConnection* recv = nullptr;
  int sendPeer = -1;  // the ranks at the other end of `send` and `recv`
  int recvPeer = -1;
  bool resolved = false;
  bool drained = false;  // finished, and everything it sent has left this process
  bool otherCall = false;  // a chunk arrived with another size or tag than this call's
  size_t firstOfWork = 0;  // the index of its work's first cursor (ChannelProgram::gates)
  bool gated = false;      // its phase waits on another program of its work
  // What it waits for, for error messages and health checks.
  int waitPeer = -1;
  bool waitIsRecv = false;

  bool finished() const { return phaseBegin >= program->steps.size(); }
  // Starts the phase whose steps begin at `begin` (or finishes, past the last).
  void startPhase(size_t begin) {
    const std::vector<size_t>& starts = program->phaseStarts;
    phaseBegin = step = begin;
    phaseEnd = phase < starts.size() ? starts[phase] : program->steps.size();
    iteration = iterations = sentAhead = 0;
    size_t longest = 0;
    leadGoesAhead = program->sendsAhead && phaseBegin < phaseEnd && program->steps[phaseBegin].kind == StepKind::kSend;
    for (size_t i = phaseBegin; i < phaseEnd; ++i) {
      longest = std::max(longest, program->steps[i].count);
      // A chunk sent ahead must not overtake one a later step of the phase
      // sends to the same peer (a ring's): the peer takes them in order.
      if (i > phaseBegin && program->steps[i].sendPeer == program->steps[phaseBegin].sendPeer) leadGoesAhead = false;
    }
    if (phase < program->phaseLinks.size()) chunk = oneShotChunk(longest);
    iterations = (longest + chunk - 1) / chunk;
    if (iterations == 0 && phaseBegin < program->steps.size()) nextPhase();  // nothing to move
  }
  // Elements a chunk of the phase whose longest step is `longest`: whole
  // if it fits one slot of the phase's link (with its tag), else that link's chunks.
  size_t oneShotChunk(size_t longest) const {
    const OneShotSlots& slots = work->oneShotSlots[static_cast<int>(program->phaseLinks[phase])];
    const size_t dataBytes = slots.slotBytes - (work->tag ? kChunkTagBytes : 0);
    return chunkElems(*work, longest * dtypeSize(work->dtype) <= dataBytes ? dataBytes : slots.chunkDataBytes);
  }
  void nextPhase() {
    const size_t end = phaseEnd;
    ++phase;
    startPhase(end);
  }
  // Past a chunk of the step (or a step with no chunk at this iteration).
  void nextStep() {
    resolved = false;
    if (++step < phaseEnd) return;
    step = phaseBegin;
    if (++iteration == iterations) nextPhase();
  }
};

enum class Advance { kProgress, kBlocked, kError };

class Run {
 public:
  Run(Work* works, size_t count, const Reducer& reducer, const ExecOptions& options)
      : works_(works), count_(count), reducer_(reducer), options_(options) {}

  Status go();

 private:
  Status resolve(Cursor& c);
  Advance advance(Cursor& c, Status* error);
  // Does the step's work on one chunk and posts what it sends.
  Status doChunk(const Cursor& c, const Step& s, size_t offset, const void* recvBuf,
                 void* sendBuf, size_t n);
  // kRecvAll* steps: peeks the current chunk of every other rank into
  // operands_; blocked until all are there.
  Advance gather(Cursor& c, const Step& s, size_t bytes, Status* error);
  // ChannelProgram::sendsAhead: the phase's leading send's next chunks, while
  // the cursor waits on a later step. Whether it sent any.
  bool sendAhead(Cursor& c, Status* error);
  // out = ((x0 + x1) + x2) + ... over operands_, `own` in this rank's place.
  void reduceInRankOrder(const Work& w, const char* own, char* partial, char* out, size_t n, RedOp op);
  // A chunk of `got` bytes came from `peer`: an error unless it is the
  // `want` bytes (tag included) of this call.
  static Status checkChunk(Cursor& c, int peer, const void* chunk, size_t got, size_t want);
  // "allreduce #5 on rank 0, recv step 2/10 chunk 1/4 of channel 0, receiving from ...".
  std::string where(const Cursor& c) const;
  Status describe(const Cursor& c, const Status& cause) const { return cause.withContext(where(c)); }
  // The deadline passed: asks the ranks why, and blames the rank that
  // holds the call up (telling every rank) rather than the peer waited on.
  Status timedOut(Cursor& c);
  // Another rank gave a verdict (a hang's culprit, or a mismatch): gives up now, saying why.
  Status givenUp(Cursor& c, const HangReport& verdict, int by);
  // Asks every rank what it called under this call's number: InvalidUsage
  // naming both calls (and every rank told) when one called another, else Ok.
  Status checkMatch(Cursor& c, const std::string& event);
  // Publishes what the first blocked cursor waits on (ranks that time out read it).
  void publishWait() const;
  // Fails the run on `cause`, which came from the connection to `peer` (-1:
  // the one the cursor waits on) in the direction given.
  Status fail(Cursor& c, const Status& cause, int peer = -1, bool sending = false);
  bool eligible(size_t index) const;
  // Whether the cursor's phase may start: every program it waits on
  // (ChannelProgram::gates) has finished the phases it needs.
  bool gateOpen(const Cursor& c) const;
  Status checkAbort();  // the communicator was aborted or revoked
  Status checkHealth();
  // A kRecvAll* step waits on the first rank whose chunk is missing, but
  // any other still missing may be the one that died: checks them all.
  Status checkEveryPeer(Cursor& c);
  // Progresses the cursor's send connections; marks it drained once all are flushed.
  Status drain(Cursor& c);
  // A blocked cursor keeps every connection of its program moving, not just
  // the current step's: a transport that moves data only when polled (a UCX
  // rendezvous, a socket's unsent tail) must not wait on this rank while
  // this rank waits on shared memory for a peer that waits on it.
  Status progressProgram(Cursor& c);
  // Sleeps until a socket that a blocked cursor waits on is ready (at most
  // 1 ms). False when some wait has no descriptor (shared memory): then the
  // caller must keep polling.
  bool sleepOnDescriptors();
  // Sleeps until a peer that a blocked cursor waits for moves (at most 1
  // ms), where every blocked cursor waits on shared memory and may sleep
  // (maySleepOnPeers). False otherwise: the caller keeps polling.
  bool sleepOnSharedMemory();
  // Whether the cursor may sleep on its wait's peer: host memory, and each
  // connection of its program either wakes this rank when its peer moves
  // (shared memory) or is a socket with nothing left to send, whose kernel
  // holds what arrives meanwhile.
  bool maySleepOnPeers(const Cursor& c);
  // Waits on sockets and on shared memory at once: sleeps in poll() on the
  // sockets and this rank's doorbell, which the host-mates waited on ring.
  bool sleepOnSocketsAndBell();
  // What the blocked cursors wait on, for a sleep: a socket's descriptor or
  // a shared-memory word each (and a slot for the doorbell's descriptor).
  struct Waits {
    pollfd fds[WakeWord::kMaxWords + 1];
    nfds_t nfds = 0;
    WakeWord* words[WakeWord::kMaxWords];
    const Cursor* onWords[WakeWord::kMaxWords];
    int nwords = 0;
    bool anyMoved() const;  // a peer waited on by a word moved
  };
  // False when some wait has neither or may not sleep (maySleepOnPeers), or
  // a finished cursor still has bytes to send.
  bool gatherWaits(Waits* w);

  Work* works_;
  size_t count_;
  const Reducer& reducer_;
  const ExecOptions& options_;
  int64_t startNs_ = 0;  // set with the deadline: no clock read of its own on the fast path
  double nextMatchCheck_ = options_.matchCheckSeconds;  // seconds into the call; doubles after each
  // Reused across calls on this thread: steady-state calls allocate nothing.
  static thread_local std::vector<Cursor> cursors_;
  // A kRecvAll* step's chunk of each rank, and the connections it came on.
  static thread_local std::vector<const void*> operands_;
  static thread_local std::vector<RecvConnection*> operandSources_;
};

thread_local std::vector<Cursor> Run::cursors_;
thread_local std::vector<const void*> Run::operands_;
thread_local std::vector<RecvConnection*> Run::operandSources_;

Status Run::resolve(Cursor& c) {
  c.resolved = true;
  if (c.finished()) return Status::Ok();
  const Step& s = c.program->steps[c.step];
  c.send = nullptr;
  c.recv = nullptr;
  c.sendPeer = s.sendPeer;
  c.recvPeer = s.recvPeer;
  if (s.sendPeer >= 0) c.send = c.work->peers->sendTo(c.work->memory, c.program->channel, s.sendPeer);
  if (s.recvPeer >= 0) c.recv = c.work->peers->recvFrom(c.work->memory, c.program->channel, s.recvPeer);
  if ((s.sendPeer >= 0 && !c.send) || (s.recvPeer >= 0 && !c.recv))
    return InternalError("no connection for channel " + std::to_string(c.program->channel));
  return Status::Ok();
}

Status Run::doChunk(const Cursor& c, const Step& s, size_t offset, const void* recvBuf,
                    void* sendBuf, size_t n) {
  const Work& w = *c.work;
  const size_t es = dtypeSize(w.dtype);
  const char* source = s.fromOutput ? static_cast<const char*>(w.output) : static_cast<const char*>(w.input);
  const char* in = source + (s.inOffset + offset) * es;
  char* const partial = static_cast<char*>(w.output) + (s.outOffset + offset) * es;
  char* out = s.final && w.finalOutput ? static_cast<char*>(w.finalOutput) + (s.outOffset + offset) * es : partial;
  const size_t bytes = n * es;
  // Partial results are plain sums; avg divides once, where the value is final.
  RedOp op = w.op == RedOp::kAvg && !s.final ? RedOp::kSum : w.op;
  // The chunk to send, when it already lies in a buffer (else it is reduced
  // straight into the slot). Sockets send it from there; others copy it.
  const void* payload = nullptr;
  switch (s.kind) {
    case StepKind::kCopy:
      if (op == RedOp::kAvg && w.nranks > 1) reducer_.divide(out, in, n, w.dtype, w.nranks);
      else reducer_.copy(out, in, bytes);
      break;
    case StepKind::kSend:
      payload = in;
      break;
    case StepKind::kCopySend:
      reducer_.copy(out, in, bytes);
      payload = in;
      break;
    case StepKind::kRecv:
      reducer_.copy(out, recvBuf, bytes);
      break;
    case StepKind::kRecvCopySend:
      reducer_.copy(out, recvBuf, bytes);
      payload = out;
      break;
    case StepKind::kRecvReduceSend:
      reducer_.reduce(sendBuf, recvBuf, in, n, w.dtype, op, w.nranks);
      break;
    case StepKind::kReduceCopy:
      reducer_.reduce(out, partial, in, n, w.dtype, op, w.nranks);
      break;
    case StepKind::kReduceCopySend:
      reducer_.reduce(out, partial, in, n, w.dtype, op, w.nranks);
      payload = out;
      break;
    case StepKind::kRecvReduceCopy:
      reducer_.reduce(out, recvBuf, in, n, w.dtype, op, w.nranks);
      break;
    case StepKind::kRecvReduceCopySend:
      reducer_.reduce(out, recvBuf, in, n, w.dtype, op, w.nranks);
      payload = out;
      break;
    case StepKind::kRecvAllReduceCopy:
    case StepKind::kRecvAllReduceCopySend:
      reduceInRankOrder(w, in, partial, out, n, op);
      payload = out;
      break;
  }
  if (!stepSends(s.kind)) return Status::Ok();
  // Sent by reference, the bytes must not change until flushed: inputs are
  // read-only here, and an output chunk is written once per call (rings,
  // trees), or not before the peer has it (ChannelProgram::sentBytesStay).
  if (payload && c.send->sendsByReference()) {
    if (!w.tag) return c.send->postReference(payload, bytes);
    if (c.program->sentBytesStay && c.send->sendsTaggedByReference())
      return c.send->postTaggedReference(payload, bytes, w.tag);
  }
  if (payload) reducer_.copy(sendBuf, payload, bytes);
  if (!w.tag) return c.send->post(bytes);
  std::memcpy(static_cast<char*>(sendBuf) + bytes, &w.tag, kChunkTagBytes);
  return c.send->post(bytes + kChunkTagBytes);
}

void Run::reduceInRankOrder(const Work& w, const char* own, char* partial, char* out, size_t n, RedOp op) {
  operands_[w.rank] = own;
  const bool host = w.memory == Memory::kHost;
  sumInRankOrder(reducer_, operands_.data(), operands_.size(), host ? nullptr : partial, out, n, w.dtype, op,
                 w.nranks);
}

Status Run::checkChunk(Cursor& c, int peer, const void* chunk, size_t got, size_t want) {
  const uint64_t tag = c.work->tag;
  if (got == want && (!tag || std::memcmp(static_cast<const char*>(chunk) + want - kChunkTagBytes, &tag,
                                          kChunkTagBytes) == 0))
    return Status::Ok();
  c.waitPeer = peer;
  c.otherCall = true;
  if (got != want)
    return InvalidUsage("received a chunk of " + std::to_string(got) + " bytes where " + std::to_string(want) +
                        " were expected (do all ranks call the same collective with the same count and dtype?)");
  return InvalidUsage("received a chunk of another call (do all ranks call the same collective with the same "
                      "arguments?)");
}

Advance Run::gather(Cursor& c, const Step& s, size_t bytes, Status* error) {
  const Work& w = *c.work;
  operands_.assign(s.allRanks, nullptr);
  operandSources_.assign(s.allRanks, nullptr);
  int missing = -1;
  for (int j = 0; j < s.allRanks; ++j) {
    if (j == w.rank) continue;
    RecvConnection* from = w.peers->recvFrom(w.memory, c.program->channel, j);
    if (!from) {
      *error = InternalError("no connection for channel " + std::to_string(c.program->channel));
      return Advance::kError;
    }
    size_t got = 0;
    const void* chunk = from->peek(&got);
    // Every connection is asked even after a miss: sockets read only when asked.
    if (!chunk && missing < 0) missing = j;
    Status st = chunk ? checkChunk(c, j, chunk, got, bytes) : Status::Ok();
    if (st.ok()) {
      operands_[j] = chunk;
      operandSources_[j] = from;
      continue;
    }
    c.recv = from;
    c.recvPeer = j;
    *error = st;
    return Advance::kError;
  }
  if (missing < 0) return Advance::kProgress;
  // What the health checks, the poll and error messages look at.
  c.recv = operandSources_[missing];
  c.recvPeer = missing;
  c.waitPeer = missing;
  c.waitIsRecv = true;
  return Advance::kBlocked;
}

std::string Run::where(const Cursor& c) const {
  const Work& w = *c.work;
  std::string what = std::string(collectiveName(w.plan->collective)) + " #" +
                     std::to_string(w.sequence) + " on rank " + std::to_string(w.rank);
  if (!c.finished()) {
    const Step& s = c.program->steps[c.step];
    what += ", " + std::string(stepKindName(s.kind)) + " step " + std::to_string(c.step + 1) +
            "/" + std::to_string(c.program->steps.size()) + " chunk " +
            std::to_string(c.iteration + 1) + "/" + std::to_string(c.iterations);
    if (c.program->channel >= 0) what += " of channel " + std::to_string(c.program->channel);
  }
  if (c.waitPeer >= 0)
    what += (c.waitIsRecv ? ", receiving from " : ", sending to ") +
            w.peers->describePeer(c.waitPeer);
  return what;
}

Status Run::timedOut(Cursor& c) {
  int culprit = -1;
  Status st = timedOutVerdict(c.work->peers, c.work->rank, options_.timeoutSeconds, where(c), &culprit);
  return culprit < 0 ? fail(c, st) : st;
}

Status Run::givenUp(Cursor& c, const HangReport& verdict, int by) {
  return givenUpVerdict(c.work->peers, c.work->rank, verdict, by, static_cast<double>(nowNs() - startNs_) / 1e9,
                        where(c));
}

Status Run::checkMatch(Cursor& c, const std::string& event) {
  return checkSameCallNumber(c.work->peers, event, where(c));
}

void Run::publishWait() const {
  for (const Cursor& c : cursors_) {
    if (c.finished() || c.waitPeer < 0 || !c.work->progress) continue;
    c.work->progress->waitOn(c.waitPeer, c.waitIsRecv, static_cast<uint32_t>(c.step + 1));
    return;
  }
}

// Records the failure, tells every peer of this operation which rank failed
// (so ranks far from it fail fast and name it), and returns the full error.
// The rank to blame is the one a failure notice names; a connection that
// broke without one may be a survivor that gave up first, closing before
// its notice could reach this connection, so the other connections get a
// moment to deliver one (kNoticeGraceSeconds) before the peer is blamed.
Status Run::fail(Cursor& c, const Status& cause, int peer, bool sending) {
  constexpr double kNoticeGraceSeconds = 0.2;
  if (peer >= 0) {
    c.waitPeer = peer;
    c.waitIsRecv = !sending;
  }
  if (c.otherCall) {  // most likely another call under this number: find it
    Status mismatch = checkMatch(c, "does not match across ranks (rank " + std::to_string(c.work->rank) +
                                        " received a chunk of another call)");
    if (!mismatch.ok()) return mismatch;
    // The rank that differs may have found it first, told us, and left.
    int by = -1;
    HangReport v = awaitVerdict(c.work->peers, &by);
    if (v.culprit >= 0) return givenUp(c, v, by);
  }
  if (cause.code() == Code::kInvalidUsage) return describe(c, cause);  // aborted, or a caller's mistake
  int failed = c.waitIsRecv ? (c.recv ? c.recv->reportedFailure() : -1)
                            : (c.send ? c.send->reportedFailure() : -1);
  Status why = cause;
  if (failed < 0 && cause.code() != Code::kTimeout) {
    failed = c.work->peers->reportedFailure(kNoticeGraceSeconds);
    if (failed >= 0 && failed != c.waitPeer)
      why = Status(cause.code(), cause.message() + "; rank " + std::to_string(failed) +
                                     " failed first, as its peers report");
  }
  if (failed >= 0) {  // a peer gave up: with a verdict, say why, as the rank that gave it found
    int by = -1;
    HangReport v = awaitVerdict(c.work->peers, &by);
    if (v.culprit >= 0) return givenUp(c, v, by);
  }
  if (failed < 0) failed = c.waitPeer;
  c.work->peers->notifyFailure(failed);
  return describe(c, why);
}

Advance Run::advance(Cursor& c, Status* error) {
  const size_t es = dtypeSize(c.work->dtype);
  while (!c.finished()) {
    if (c.iteration == 0 && c.step == c.phaseBegin && !c.program->gates.empty()) {
      c.gated = !gateOpen(c);
      if (c.gated) {
        c.waitPeer = -1;  // waits on this rank: neither a peer to blame nor one to sleep on
        return Advance::kBlocked;
      }
    }
    const Step& s = c.program->steps[c.step];
    const size_t chunk = c.chunk;  // the phase's
    const size_t offset = c.iteration * chunk;
    // This step's range is shorter than others', or its chunk went ahead.
    if (offset >= s.count || (c.step == c.phaseBegin && c.sentAhead > c.iteration)) {
      c.nextStep();
      continue;
    }
    const size_t n = std::min(chunk, s.count - offset);
    if (!c.resolved) {
      *error = resolve(c);
      if (!error->ok()) return Advance::kError;
    }
    const void* recvBuf = nullptr;
    size_t recvBytes = 0;
    const bool fromAll = stepReceivesFromAll(s.kind);
    const size_t tagBytes = c.work->tag ? kChunkTagBytes : 0;
    if (fromAll) {
      const Advance a = gather(c, s, n * es + tagBytes, error);
      if (a != Advance::kProgress) return a;
    } else if (c.recv) {
      recvBuf = c.recv->peek(&recvBytes);
      if (!recvBuf) {
        c.waitPeer = s.recvPeer;
        c.waitIsRecv = true;
        const bool sent = sendAhead(c, error);
        if (!error->ok()) return Advance::kError;
        return sent ? Advance::kProgress : Advance::kBlocked;
      }
      *error = checkChunk(c, s.recvPeer, recvBuf, recvBytes, n * es + tagBytes);
      if (!error->ok()) return Advance::kError;
    }
    void* sendBuf = nullptr;
    size_t capacity = 0;
    if (c.send) {
      sendBuf = c.send->acquire(&capacity);
      if (!sendBuf) {
        c.waitPeer = s.sendPeer;
        c.waitIsRecv = false;
        return Advance::kBlocked;
      }
      if (n * es + tagBytes > capacity) {
        *error = InternalError("chunk larger than the connection's slot");
        return Advance::kError;
      }
    }
    *error = doChunk(c, s, offset, recvBuf, sendBuf, n);
    if (c.step == c.phaseBegin) c.sentAhead = c.iteration + 1;
    bool sendBroke = !error->ok();  // only posting the chunk can fail there
    if (!sendBroke && fromAll) {
      for (int j = 0; j < s.allRanks && error->ok(); ++j)
        if (operandSources_[j]) {
          c.recv = operandSources_[j];
          c.recvPeer = j;
          *error = c.recv->release();
        }
    } else if (!sendBroke && c.recv) {
      *error = c.recv->release();
    }
    if (!error->ok()) {  // blame the connection that broke
      c.waitPeer = sendBroke ? c.sendPeer : c.recvPeer;
      c.waitIsRecv = !sendBroke;
      return Advance::kError;
    }
    c.waitPeer = -1;
    c.nextStep();
    return Advance::kProgress;
  }
  return Advance::kProgress;
}

bool Run::sendAhead(Cursor& c, Status* error) {
  if (!c.leadGoesAhead || c.step == c.phaseBegin) return false;
  const Step& lead = c.program->steps[c.phaseBegin];
  if (c.sentAhead * c.chunk >= lead.count) return false;  // nothing left to lead
  Cursor ahead = c;  // the lead step's view, for doChunk
  ahead.send = c.work->peers->sendTo(c.work->memory, c.program->channel, lead.sendPeer);
  ahead.sendPeer = lead.sendPeer;
  const size_t es = dtypeSize(c.work->dtype), tagBytes = c.work->tag ? kChunkTagBytes : 0;
  bool sent = false;
  while (ahead.send && c.sentAhead * c.chunk < lead.count) {
    const size_t offset = c.sentAhead * c.chunk, n = std::min(c.chunk, lead.count - offset);
    size_t capacity = 0;
    void* buf = ahead.send->acquire(&capacity);
    if (!buf || n * es + tagBytes > capacity) break;
    *error = doChunk(ahead, lead, offset, nullptr, buf, n);
    if (!error->ok()) {
      c.waitPeer = lead.sendPeer;
      c.waitIsRecv = false;
      return false;
    }
    ++c.sentAhead;
    sent = true;
  }
  return sent;
}

bool Run::gateOpen(const Cursor& c) const {
  for (const ChannelProgram::Gate& g : c.program->gates) {
    if (g.phase != c.phase) continue;
    const Cursor& other = cursors_[c.firstOfWork + g.program];
    if (!other.finished() && other.phase < g.afterPhases) return false;
  }
  return true;
}

// A Work may start once no earlier unfinished Work shares one of its connections.
bool Run::eligible(size_t index) const {
  if (count_ == 1) return true;
  const Cursor& me = cursors_[index];
  for (size_t i = 0; i < index; ++i) {
    const Cursor& other = cursors_[i];
    if (other.work == me.work || other.finished()) continue;
    if (other.work->peers != me.work->peers || other.work->memory != me.work->memory) continue;
    if (other.program->channel != me.program->channel) continue;
    // Same channel of the same communicator: on a ring that is the same pair of
    // connections; for send/recv, the same peer.
    if (me.program->channel != kP2PChannel) return false;
    if (me.program->steps.empty() || other.program->steps.empty()) continue;
    const Step& a = me.program->steps[0];
    const Step& b = other.program->steps[0];
    if ((a.sendPeer >= 0 && a.sendPeer == b.sendPeer) ||
        (a.recvPeer >= 0 && a.recvPeer == b.recvPeer))
      return false;
  }
  return true;
}

Status Run::drain(Cursor& c) {
  bool flushed = true;
  for (const Step& s : c.program->steps) {
    if (s.sendPeer < 0) continue;
    SendConnection* conn = c.work->peers->sendTo(c.work->memory, c.program->channel, s.sendPeer);
    if (!conn || conn->flushed()) continue;
    Status st = conn->progress();
    if (!st.ok()) return fail(c, st, s.sendPeer, true);
    flushed &= conn->flushed();
  }
  c.drained = flushed;
  return Status::Ok();
}

Status Run::progressProgram(Cursor& c) {
  SendConnection* lastSend = nullptr;
  RecvConnection* lastRecv = nullptr;
  for (const Step& s : c.program->steps) {  // consecutive steps mostly share connections
    SendConnection* send = s.sendPeer >= 0 ? c.work->peers->sendTo(c.work->memory, c.program->channel, s.sendPeer) : nullptr;
    if (send && send != lastSend && send != c.send) {
      Status st = send->progress();
      if (!st.ok()) return fail(c, st, s.sendPeer, true);
    }
    if (send) lastSend = send;
    forEachRecvPeer(s, c.work->rank, [&](int peer) {
      RecvConnection* recv = c.work->peers->recvFrom(c.work->memory, c.program->channel, peer);
      // A peer that sent all this call needs from it may have returned and
      // closed: no error until a step waits on that connection (then peek
      // and checkPeer report it).
      if (recv && recv != lastRecv && recv != c.recv) (void)recv->progress();
      if (recv) lastRecv = recv;
    });
  }
  return Status::Ok();
}

Status Run::checkEveryPeer(Cursor& c) {
  const Step& s = c.program->steps[c.step];
  const Work& w = *c.work;
  for (int j = 0; j < s.allRanks; ++j) {
    if (j == w.rank) continue;
    RecvConnection* from = w.peers->recvFrom(w.memory, c.program->channel, j);
    size_t bytes = 0;
    // A rank whose chunk is here may have finished and left: not a failure.
    Status st = from && !from->peek(&bytes) ? from->checkPeer() : Status::Ok();
    if (st.ok()) continue;
    c.recv = from;  // the one to blame, rather than the first still missing
    c.recvPeer = j;
    c.waitPeer = j;
    return st;
  }
  return Status::Ok();
}

Status Run::checkAbort() {
  for (Cursor& c : cursors_)
    if (!c.finished() && c.work->abort && c.work->abort->load(std::memory_order_relaxed))
      return describe(c, InvalidUsage("communicator aborted (tuttiCommAbort, tuttiCommRevoke or a shrink's revoke)"));
  return Status::Ok();
}

Status Run::checkHealth() {
  TUTTI_RETURN_IF_ERROR(checkAbort());
  for (Cursor& c : cursors_) {
    if (c.finished() || c.waitPeer < 0) continue;
    Status st = c.waitIsRecv ? (c.recv ? c.recv->checkPeer() : Status::Ok())
                             : (c.send ? c.send->checkPeer() : Status::Ok());
    if (st.ok() && c.waitIsRecv) st = checkEveryPeer(c);
    if (!st.ok()) return fail(c, st);
    int by = -1;
    if (HangReport v = c.work->peers->verdictOfPeer(&by); v.culprit >= 0) return givenUp(c, v, by);
  }
  return Status::Ok();
}

bool Run::sleepOnDescriptors() {
  pollfd fds[64];
  nfds_t n = 0;
  for (const Cursor& c : cursors_) {
    if (c.finished() || c.waitPeer < 0) continue;
    int fd = c.waitIsRecv ? (c.recv ? c.recv->pollFd() : -1) : (c.send ? c.send->pollFd() : -1);
    if (fd < 0 || n == 64) return false;
    fds[n++] = {fd, static_cast<short>(c.waitIsRecv ? POLLIN : POLLOUT), 0};
  }
  if (n == 0) return false;
  ::poll(fds, n, 1);
  return true;
}

bool Run::maySleepOnPeers(const Cursor& c) {
  const Work& w = *c.work;
  if (w.memory != Memory::kHost) return false;  // a device wait is a kernel's, not a peer's
  bool may = true;
  for (const Step& s : c.program->steps) {
    if (s.sendPeer >= 0) {
      SendConnection* send = w.peers->sendTo(w.memory, c.program->channel, s.sendPeer);
      may = send && (send->wakeWord() || (send->pollFd() >= 0 && send->flushed()));
    }
    forEachRecvPeer(s, w.rank, [&](int peer) {
      RecvConnection* recv = w.peers->recvFrom(w.memory, c.program->channel, peer);
      may = may && recv && (recv->wakeWord() || recv->pollFd() >= 0);
    });
    if (!may) return false;
  }
  return true;
}

bool Run::Waits::anyMoved() const {
  for (int i = 0; i < nwords; ++i)
    if (onWords[i]->waitIsRecv ? onWords[i]->recv->peerMoved() : onWords[i]->send->peerMoved()) return true;
  return false;
}

bool Run::gatherWaits(Waits* w) {
  for (size_t i = 0; i < cursors_.size(); ++i) {
    Cursor& c = cursors_[i];
    if (c.finished()) {
      if (!c.drained) return false;
      continue;
    }
    if (!eligible(i) || c.gated) continue;  // waits on another cursor of this rank
    if (c.waitPeer < 0 || w->nfds == WakeWord::kMaxWords || w->nwords == WakeWord::kMaxWords) return false;
    const int fd = c.waitIsRecv ? (c.recv ? c.recv->pollFd() : -1) : (c.send ? c.send->pollFd() : -1);
    if (fd >= 0) {
      w->fds[w->nfds++] = {fd, static_cast<short>(c.waitIsRecv ? POLLIN : POLLOUT), 0};
      continue;
    }
    WakeWord* word = c.waitIsRecv ? (c.recv ? c.recv->wakeWord() : nullptr) : (c.send ? c.send->wakeWord() : nullptr);
    if (!word || !maySleepOnPeers(c)) return false;
    w->onWords[w->nwords] = &c;
    w->words[w->nwords++] = word;
  }
  return true;
}

bool Run::sleepOnSharedMemory() {
  Waits w;
  if (!gatherWaits(&w) || w.nfds > 0 || w.nwords == 0) return false;
  WakeWord::sleepOnAny(w.words, w.nwords, [&] { return w.anyMoved(); }, kSharedMemorySleepUs);
  return true;
}

bool Run::sleepOnSocketsAndBell() {
  const Doorbell* bell = cursors_.empty() ? nullptr : cursors_.front().work->peers->doorbell();
  Waits w;
  // One kind only: the other sleeps serve it.
  if (!bell || !gatherWaits(&w) || w.nfds == 0 || w.nwords == 0) return false;
  for (int i = 0; i < w.nwords; ++i)  // rung, and rung here (not another communicator's bell of a group call)
    if (!w.words[i]->pollable() || w.onWords[i]->work->peers->doorbell() != bell) return false;
  w.fds[w.nfds++] = {bell->fd(), POLLIN, 0};
  for (int i = 0; i < w.nwords; ++i) w.words[i]->pollers.fetch_add(1, std::memory_order_seq_cst);
  if (!w.anyMoved() && ::poll(w.fds, w.nfds, kSharedMemorySleepUs / 1000) > 0 && w.fds[w.nfds - 1].revents)
    bell->drain();
  for (int i = 0; i < w.nwords; ++i) w.words[i]->pollers.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

Status Run::go() {
  cursors_.clear();
  for (size_t i = 0; i < count_; ++i) {
    const size_t first = cursors_.size();
    for (const ChannelProgram& p : works_[i].plan->channels) {
      Cursor c{&works_[i], &p};
      c.firstOfWork = first;
      c.chunk = chunkElems(works_[i], works_[i].chunkBytes);
      c.startPhase(0);
      cursors_.push_back(c);
    }
  }
  Deadline deadline = Deadline::after(options_.timeoutSeconds);
  startNs_ = deadline.atNs() - static_cast<int64_t>(options_.timeoutSeconds * 1e9);
  Backoff backoff(options_.spinCount);
  int64_t idleSinceNs = -1;  // when this rank last moved, once it waits (yieldUsBeforeSleep)
  size_t live = cursors_.size();
  while (live > 0) {
    bool progressed = false;
    live = 0;
    for (size_t i = 0; i < cursors_.size(); ++i) {
      Cursor& c = cursors_[i];
      if (c.finished()) {
        // Sockets send only when polled: a finished channel's last chunks
        // must keep moving while this rank waits on another channel.
        if (!c.drained) TUTTI_RETURN_IF_ERROR(drain(c));
        continue;
      }
      ++live;
      if (!eligible(i)) continue;
      Status error;
      Advance a = advance(c, &error);
      if (a == Advance::kError) return fail(c, error);
      if (a == Advance::kProgress) progressed = true;
      // Not every idle round: the sweep walks the program's steps and may
      // cost a syscall per connection; it only has to break cycles.
      if (a == Advance::kBlocked && backoff.shouldSweep()) TUTTI_RETURN_IF_ERROR(progressProgram(c));
      // Sockets move bytes only when polled: keep both ends of a step moving.
      if (c.send) {
        Status st = c.send->progress();
        if (!st.ok()) return fail(c, st, c.sendPeer, true);
      }
    }
    if (progressed) {
      backoff.reset();
      idleSinceNs = -1;
      continue;
    }
    if (live == 0) break;
    // A socket poll is a syscall: after a few, sleep in poll() until data comes.
    const int64_t beforeSleep = options_.socketYieldRounds > 0 ? options_.spinCount + options_.socketYieldRounds
                                                               : std::min(options_.spinCount, 64);
    const int64_t idle = backoff.idleRounds();
    bool yieldedLong = false;
    if (options_.yieldUsBeforeSleep >= 0) {
      const int64_t now = nowNs();
      if (idleSinceNs < 0) idleSinceNs = now;
      yieldedLong = now - idleSinceNs >= options_.yieldUsBeforeSleep * 1000LL;
    }
    const bool socketSleeps = idle >= beforeSleep;
    const bool sharedMemorySleeps =
        options_.sharedMemoryYieldRounds >= 0 &&
        (idle >= options_.spinCount + options_.sharedMemoryYieldRounds || yieldedLong);
    if ((socketSleeps && sleepOnDescriptors()) || (sharedMemorySleeps && sleepOnSharedMemory()) ||
        (sharedMemorySleeps && (socketSleeps || yieldedLong) && sleepOnSocketsAndBell())) {
      backoff.countIdle();
      // A round asleep lasts up to 1 ms: an abort (a revoke, a shrink) must
      // not wait a thousand of them for the health check below.
      TUTTI_RETURN_IF_ERROR(checkAbort());
    } else {
      backoff.pause();
    }
    if (backoff.shouldCheck()) {
      TUTTI_RETURN_IF_ERROR(checkHealth());
      publishWait();
      const double waited = static_cast<double>(nowNs() - startNs_) / 1e9;
      if (nextMatchCheck_ > 0 && waited >= nextMatchCheck_) {
        nextMatchCheck_ *= 2;
        char event[96];
        snprintf(event, sizeof(event), "does not match across ranks (seen by rank %d after %.1f s)",
                 cursors_.front().work->rank, waited);
        for (Cursor& c : cursors_)
          if (!c.finished()) {
            TUTTI_RETURN_IF_ERROR(checkMatch(c, event));
            break;
          }
      }
      if (deadline.expired()) {
        for (Cursor& c : cursors_)
          if (!c.finished()) return timedOut(c);
      }
    }
  }
  // Everything we sent must leave this process before the call returns.
  backoff.reset();
  for (Cursor& c : cursors_) {
    for (const Step& s : c.program->steps) {
      if (s.sendPeer < 0) continue;
      SendConnection* conn = c.work->peers->sendTo(c.work->memory, c.program->channel, s.sendPeer);
      while (conn && !conn->flushed()) {
        Status st = conn->progress();
        if (!st.ok()) return fail(c, st, s.sendPeer, true);
        backoff.pause();
        if (backoff.shouldCheck() && deadline.expired())
          return fail(c, TimeoutError("timed out flushing data to the peer (TUTTI_TIMEOUT)"));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status execute(Work* works, size_t count, const Reducer& reducer, const ExecOptions& options) {
  Run run(works, count, reducer, options);
  Status st = run.go();
  for (size_t i = 0; i < count; ++i)
    if (works[i].peers) works[i].peers->callEnded(works[i].sequence, st.code());
  return st;
}

}  // namespace tutti
