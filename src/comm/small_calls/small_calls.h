// Small calls of a communicator whose ranks share one host, on its host
// block: every rank writes its chunk into its own slot once and reads the
// others' where they lie, one hop for all-reduce, reduce, broadcast,
// all-gather, reduce-scatter and barrier, instead of the executor's
// connections. Sums run in rank order, so TUTTI_DETERMINISTIC holds. The
// cost model picks it (one-shot); a call too big for a slot, tutti's own
// calls and device calls go to the executor.
//
// A wait spins, yields, then sleeps on the block's futex; it is bounded like
// the executor's: TUTTI_TIMEOUT names the culprit, a mismatched call (a slot
// with another call's tag, or a call blocked TUTTI_MATCH_CHECK_MS) fails
// naming both calls, a dead host-mate is named, and tuttiCommAbort ends it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "kernels/reducer.h"
#include "src/comm/collective_args.h"
#include "src/comm/diagnosis/flight_recorder.h"
#include "src/comm/small_calls/host_block.h"
#include "src/exec/executor.h"
#include "src/plan/tuner.h"

namespace tutti {

class SmallCalls {
 public:
  // What every call of one communicator shares: where failures go, and
  // what the rank publishes of its progress.
  struct Context {
    Peers* peers = nullptr;
    int rank = 0;
    const std::atomic<bool>* abort = nullptr;
    SharedCallRecord* progress = nullptr;  // this rank's published record (the comm always has one)
    FlightRecorder* recorder = nullptr;
  };
  SmallCalls(std::unique_ptr<HostBlock> block, std::vector<int> pids, const ExecOptions& options,
             const Context& context)
      : block_(std::move(block)), pids_(std::move(pids)), options_(options), context_(context),
        reducer_(hostReducer()), operands_(pids_.size()) {}

  HostBlock& block() { return *block_; }
  // Whether the call runs here: a host call of tutti's user for which the
  // cost model (`chosen()`, its TuneChoice) picks one-shot, each rank's input
  // (reduce-scatter's whole input) within a slot. The last answer is kept
  // by the call's kind and size: a loop of one call asks the same, and the
  // model's answer never changes.
  template <class Chosen>
  bool takes(const CollectiveArgs& a, Chosen&& chosen) {
    if (a.onDevice || a.internal || !oneShotCollective(a.collective) || !fits(a)) return false;
    const uint64_t key = static_cast<uint64_t>(a.count * dtypeSize(a.dtype)) << 8 | static_cast<uint64_t>(a.collective) << 1;
    const uint64_t memo = lastTaken_.load(std::memory_order_relaxed);
    if ((memo & ~uint64_t{1}) == key) return memo & 1;
    const TuneChoice choice = chosen();
    const bool taken = choice.algorithm == Algorithm::kOneShot;
    lastPredictedUs_.store(static_cast<float>(choice.predictedUs), std::memory_order_relaxed);
    lastTaken_.store(key | (taken ? 1 : 0), std::memory_order_relaxed);
    return taken;
  }
  // Runs the call under call number `sequence` (alike on every rank); it is
  // entered into the progress record and the flight recorder once this
  // rank's chunk is out. The lean path: a small call's latency is its
  // bookkeeping's.
  Status run(const CollectiveArgs& args, uint64_t sequence);
  // This rank gives up because `failedRank` failed (or, `revoked`, because
  // that rank revoked the communicator): its host-mates waiting on the block
  // hear it, and say which.
  void notifyFailure(int failedRank, bool revoked = false);

 private:
  struct Call {
    const CollectiveArgs* args;
    const CallSignature* signature;
    uint64_t tag;     // the signature, hashed: a slot holding another's is refused
    uint64_t number;  // block calls so far, this one included: alike on every rank
    bool entered = false;
    int waitPeer = -1;    // the rank this one waits on
    bool waitForReader = false;  // on its `done` (a slot to reuse), not its chunk
    int64_t startNs = 0;  // when the first wait went slow
    double nextMatchCheck = 0;
  };
  static bool oneShotCollective(Collective c) {
    return c == Collective::kAllReduce || c == Collective::kReduce || c == Collective::kBroadcast ||
           c == Collective::kAllGather || c == Collective::kReduceScatter;
  }
  bool fits(const CollectiveArgs& a) const {
    const size_t ranks = a.collective == Collective::kReduceScatter ? pids_.size() : 1;
    return a.count * dtypeSize(a.dtype) * ranks <= block_->slotBytes();
  }
  Status runCall(Call& call);
  // Publishes this rank's chunk for `call` once every reader is done with
  // the slot's previous call.
  Status post(Call& call, const void* chunk, size_t bytes);
  // Publishes that this rank is in the call (the progress record, the flight recorder).
  void enter(Call& call);
  // Waits until every other rank's slot holds `call`'s chunk, and checks their tags.
  Status awaitChunks(Call& call);
  Status awaitChunk(Call& call, int peer);
  // A chunk of another call lies in `peer`'s slot: find which, and say so.
  Status otherCall(Call& call, int peer);
  // Waits until ready() (which may change call.waitPeer, the rank to name).
  template <class Ready>
  Status await(Call& call, Ready&& ready) {
    for (int i = 0; i < options_.spinCount; ++i) {
      if (ready()) return Status::Ok();
      __builtin_ia32_pause();
    }
    return awaitSlowly(call, ready);
  }
  template <class Ready>
  Status awaitSlowly(Call& call, Ready& ready);
  Status checkHealth(Call& call, double waited);
  void finish(const Call& call);
  std::string where(const Call& call, int peer) const;
  int nranks() const { return static_cast<int>(pids_.size()); }

  std::unique_ptr<HostBlock> block_;
  std::vector<int> pids_;  // of every rank, all of this host
  ExecOptions options_;
  Context context_;
  const Reducer& reducer_;
  uint64_t calls_ = 0;
  uint64_t everyoneDone_ = 0;  // the least `done` of any rank, as last read
  // takes()'s last answer: the call's bytes (a slot's at most) << 8 | its kind << 1 | taken.
  // Atomic: a non-blocking communicator's thread may ask beside the user's.
  std::atomic<uint64_t> lastTaken_{~uint64_t{0}};
  std::atomic<float> lastPredictedUs_{0};  // the model's time for that call (the flight recorder's)
  std::vector<const void*> operands_;  // a call's chunks, one a rank
};

}  // namespace tutti
