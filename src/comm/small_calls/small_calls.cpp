#include "src/comm/small_calls/small_calls.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "kernels/reducer.h"
#include "src/common/clock.h"
#include "src/common/process_watch.h"
#include "src/exec/rank_order_sum.h"
#include "src/exec/verdicts.h"

namespace tutti {

namespace {

constexpr int kYieldRounds = 64;      // after the spin budget, before sleeping on the futex
constexpr int kSleepUs = 200;  // a first sleep's limit: bounds a missed wake-up (HostBlock::wake)
constexpr int kMaxSleepUs = 2000;  // a long wait's, so ranks asleep by the dozen seldom wake for nothing
constexpr int64_t kCheckEveryNs = 1000000;

}  // namespace

Status SmallCalls::run(const CollectiveArgs& args, uint64_t sequence) {
  const CallSignature signature = args.signature(sequence);
  Call call{&args, &signature, signature.tag(), ++calls_};
  Status st = runCall(call);
  enter(call);  // a call that neither posts nor waits
  if (st.ok()) finish(call);
  context_.peers->callEnded(sequence, st.code());
  return st;
}

Status SmallCalls::runCall(Call& call) {
  const CollectiveArgs& a = *call.args;
  const Reducer& reducer = reducer_;
  const int n = nranks(), me = context_.rank, root = a.root;
  const size_t count = a.count, bytes = count * dtypeSize(a.dtype);
  const char* in = static_cast<const char*>(a.input);
  char* out = static_cast<char*>(a.output);
  std::vector<const void*>& operands = operands_;
  // Every rank's chunk (`posted` bytes), this rank's from its own buffer, `offset` bytes in.
  auto gather = [&](size_t posted, size_t offset) {
    for (int r = 0; r < n; ++r) operands[r] = (r == me ? in : block_->data(r, call.number, posted)) + offset;
  };
  switch (a.collective) {
    case Collective::kAllReduce:
    case Collective::kReduce: {
      TUTTI_RETURN_IF_ERROR(post(call, in, bytes));
      if (a.collective == Collective::kReduce && me != root) return Status::Ok();
      TUTTI_RETURN_IF_ERROR(awaitChunks(call));
      gather(bytes, 0);
      sumInRankOrder(reducer, operands.data(), n, nullptr, out, count, a.dtype, a.op, n);
      return Status::Ok();
    }
    case Collective::kReduceScatter: {  // each rank's whole input in its slot; this rank's block summed
      TUTTI_RETURN_IF_ERROR(post(call, in, bytes * n));
      TUTTI_RETURN_IF_ERROR(awaitChunks(call));
      gather(bytes * n, bytes * me);
      sumInRankOrder(reducer, operands.data(), n, nullptr, out, count, a.dtype, a.op, n);
      return Status::Ok();
    }
    case Collective::kBroadcast:
      if (me == root) {
        TUTTI_RETURN_IF_ERROR(post(call, in, bytes));
        if (out != in) reducer.copy(out, in, bytes);
        return Status::Ok();
      }
      TUTTI_RETURN_IF_ERROR(awaitChunk(call, root));
      reducer.copy(out, block_->data(root, call.number, bytes), bytes);
      return Status::Ok();
    case Collective::kAllGather:
      TUTTI_RETURN_IF_ERROR(post(call, in, bytes));
      TUTTI_RETURN_IF_ERROR(awaitChunks(call));
      gather(bytes, 0);
      for (int r = 0; r < n; ++r)
        if (operands[r] != out + r * bytes) reducer.copy(out + r * bytes, operands[r], bytes);
      return Status::Ok();
    default:
      return InternalError(std::string(collectiveName(a.collective)) + " has no one-shot on the host block");
  }
}

Status SmallCalls::post(Call& call, const void* chunk, size_t bytes) {
  const int n = nranks(), me = context_.rank;
  const uint64_t b = call.number;
  // The slot last held call b - reach (or an earlier one): every reader
  // must be done with it.
  const uint64_t reach = block_->reach(bytes);
  if (b > reach && everyoneDone_ < b - reach) {
    TUTTI_RETURN_IF_ERROR(await(call, [&] {
      uint64_t least = UINT64_MAX;
      for (int r = 0; r < n; ++r) {
        const uint64_t d = block_->done(r).load(std::memory_order_acquire);
        if (d < least) {
          least = d;
          call.waitPeer = r;
          call.waitForReader = true;
        }
      }
      everyoneDone_ = least;
      return least >= b - reach;
    }));
  }
  HostBlock::SlotHeader& slot = block_->slot(me, b);
  reducer_.copy(block_->data(me, b, bytes), chunk, bytes);
  slot.tag = call.tag;
  slot.call.store(b, std::memory_order_release);
  block_->wake(me);
  block_->claimAhead(me, b + 1, bytes);  // a next call of this size, most likely
  enter(call);
  return Status::Ok();
}

void SmallCalls::enter(Call& call) {
  if (call.entered) return;
  call.entered = true;
  context_.progress->enter(*call.signature);
  context_.recorder->begin(*call.signature, false,
                           {algorithmName(Algorithm::kOneShot), 0, lastPredictedUs_.load(std::memory_order_relaxed)});
}

Status SmallCalls::awaitChunks(Call& call) {
  const int n = nranks(), me = context_.rank;
  // From the rank after this one, so no rank is everyone's first.
  for (int k = 1; k < n; ++k) TUTTI_RETURN_IF_ERROR(awaitChunk(call, (me + k) % n));
  return Status::Ok();
}

Status SmallCalls::awaitChunk(Call& call, int peer) {
  const uint64_t b = call.number;
  const HostBlock::SlotHeader& slot = block_->slot(peer, b);
  call.waitPeer = peer;
  call.waitForReader = false;
  enter(call);
  TUTTI_RETURN_IF_ERROR(await(call, [&] { return slot.call.load(std::memory_order_acquire) >= b; }));
  if (slot.call.load(std::memory_order_acquire) != b || slot.tag != call.tag) return otherCall(call, peer);
  return Status::Ok();
}

Status SmallCalls::otherCall(Call& call, int peer) {
  const Context& w = context_;
  const std::string here = where(call, peer);
  TUTTI_RETURN_IF_ERROR(checkSameCallNumber(
      w.peers, "does not match across ranks (rank " + std::to_string(w.rank) + " received a chunk of another call)",
      here));
  // The rank that differs may have found it first, told us, and left.
  int by = -1;
  HangReport v = awaitVerdict(w.peers, &by);
  if (v.culprit >= 0) return givenUpVerdict(w.peers, w.rank, v, by, 0, here);
  return InvalidUsage("received a chunk of another call (do all ranks call the same collective with the same "
                      "arguments?)")
      .withContext(here);
}

template <class Ready>
Status SmallCalls::awaitSlowly(Call& call, Ready& ready) {
  const Context& w = context_;
  enter(call);
  if (call.startNs == 0) {
    call.startNs = nowNs();
    call.nextMatchCheck = options_.matchCheckSeconds;
  }
  w.progress->waitOn(call.waitPeer, !call.waitForReader, 1);
  int64_t nextCheck = nowNs() + kCheckEveryNs;
  int sleepUs = kSleepUs;
  for (int round = 0;; ++round) {
    if (ready()) return Status::Ok();
    if (round < kYieldRounds) {
      sched_yield();
    } else {  // on the rank waited for (ready() keeps call.waitPeer current)
      const int64_t before = nowNs();
      block_->sleepOn(call.waitPeer, ready, sleepUs);
      // Slept the whole time: the wait is long, look less often.
      if (nowNs() - before >= sleepUs * 1000LL) sleepUs = std::min(2 * sleepUs, kMaxSleepUs);
    }
    const int64_t now = nowNs();
    if (now < nextCheck) continue;
    nextCheck = now + kCheckEveryNs;
    // What came while this rank slept first: a peer that gave its part and
    // left since is no failure.
    if (ready()) return Status::Ok();
    w.progress->waitOn(call.waitPeer, !call.waitForReader, 1);
    // Only the rank waited on can have died: another may have finished the
    // call and left, and one that died before its part is waited on in turn.
    const int peer = call.waitPeer;
    if (peer >= 0 && peer != w.rank && processState(pids_[peer]) == ProcessState::kGone) {
      if (ready()) return Status::Ok();  // its part came before it left
      // It may have left after finding the call mismatched, or given up
      // on another rank: its verdict says so.
      int by = -1;
      HangReport v = awaitVerdict(w.peers, &by);
      if (v.culprit >= 0)
        return givenUpVerdict(w.peers, w.rank, v, by, static_cast<double>(now - call.startNs) / 1e9, where(call, peer));
      w.peers->notifyFailure(peer);
      return RemoteError(w.peers->describePeer(peer) + " has died").withContext(where(call, peer));
    }
    TUTTI_RETURN_IF_ERROR(checkHealth(call, static_cast<double>(now - call.startNs) / 1e9));
  }
}

Status SmallCalls::checkHealth(Call& call, double waited) {
  const Context& w = context_;
  const int peer = call.waitPeer;
  if (w.abort && w.abort->load(std::memory_order_relaxed))
    return InvalidUsage("communicator aborted (tuttiCommAbort, tuttiCommRevoke or a shrink's revoke)")
        .withContext(where(call, peer));
  int by = -1;
  if (HangReport v = w.peers->verdictOfPeer(&by); v.culprit >= 0)
    return givenUpVerdict(w.peers, w.rank, v, by, waited, where(call, peer));
  const int32_t notice = block_->failureNotice().load(std::memory_order_acquire);
  if (notice < 0) {  // a host-mate revoked (an abort): no verdict comes
    w.peers->notifyFailure(-notice - 1);
    return RemoteError("rank " + std::to_string(-notice - 1) +
                       " revoked the communicator (tuttiCommRevoke, tuttiCommAbort or a shrink's revoke)")
        .withContext(where(call, peer));
  }
  if (notice > 0) {  // a host-mate gave up on a failed rank: with a verdict, say why
    HangReport v = awaitVerdict(w.peers, &by);
    if (v.culprit >= 0) return givenUpVerdict(w.peers, w.rank, v, by, waited, where(call, peer));
    w.peers->notifyFailure(notice - 1);
    return RemoteError("a rank of this host gave up because rank " + std::to_string(notice - 1) + " failed")
        .withContext(where(call, peer));
  }
  if (call.nextMatchCheck > 0 && waited >= call.nextMatchCheck) {
    call.nextMatchCheck *= 2;
    char event[96];
    snprintf(event, sizeof(event), "does not match across ranks (seen by rank %d after %.1f s)", w.rank, waited);
    TUTTI_RETURN_IF_ERROR(checkSameCallNumber(w.peers, event, where(call, peer)));
  }
  if (waited >= options_.timeoutSeconds) {
    int culprit = -1;
    Status st = timedOutVerdict(w.peers, w.rank, options_.timeoutSeconds, where(call, peer), &culprit);
    if (culprit >= 0) return st;
    w.peers->notifyFailure(peer);
    return st.withContext(where(call, peer));
  }
  return Status::Ok();
}

void SmallCalls::finish(const Call& call) {
  if (call.number % HostBlock::kDoneEvery != 0) return;
  block_->done(context_.rank).store(call.number, std::memory_order_release);
  block_->wake(context_.rank);
}

void SmallCalls::notifyFailure(int failedRank, bool revoked) {
  int32_t none = 0;
  const int32_t notice = revoked ? -(failedRank + 1) : failedRank + 1;
  block_->failureNotice().compare_exchange_strong(none, notice, std::memory_order_acq_rel);
  block_->wakeEveryone();
}

std::string SmallCalls::where(const Call& call, int peer) const {
  const Context& w = context_;
  std::string what = std::string(collectiveName(call.args->collective)) + " #" + std::to_string(call.signature->sequence) + " on rank " +
                     std::to_string(w.rank) + ", one-shot on the host block";
  if (peer >= 0)
    what += (call.waitForReader ? ", waiting for " + w.peers->describePeer(peer) + " to read the slot this call reuses"
                                : ", receiving from " + w.peers->describePeer(peer));
  return what;
}

}  // namespace tutti
