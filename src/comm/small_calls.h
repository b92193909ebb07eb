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

#include <memory>
#include <string>
#include <vector>

#include "src/comm/flight_recorder.h"
#include "src/comm/host_block.h"
#include "src/exec/executor.h"

namespace tutti {

class SmallCalls {
 public:
  SmallCalls(std::unique_ptr<HostBlock> block, std::vector<int> pids, const ExecOptions& options)
      : block_(std::move(block)), pids_(std::move(pids)), options_(options), operands_(pids_.size()) {}

  HostBlock& block() { return *block_; }
  // Whether the call, planned with `algorithm`, runs here: each rank's
  // input (reduce-scatter's whole input) fits a slot.
  bool takes(Algorithm algorithm, Collective c, size_t inputBytes, bool onDevice, bool internal) const;
  // Runs `work` (prepared by the communicator: numbered and tagged), the
  // call `signature` of `count` elements and root `root` (broadcast,
  // reduce); entered into the progress record and `recorder` once this
  // rank's chunk is out.
  Status run(const Work& work, size_t count, int root, const CallSignature& signature, FlightRecorder& recorder);
  // This rank gives up because `failedRank` failed: its host-mates waiting
  // on the block hear it.
  void notifyFailure(int failedRank);

 private:
  struct Call {
    const Work* work;
    const CallSignature* signature;
    FlightRecorder* recorder;
    bool entered = false;
    Collective collective;
    uint64_t number;  // block calls so far, this one included: alike on every rank
    int waitPeer = -1;    // the rank this one waits on
    bool waitForReader = false;  // on its `done` (a slot to reuse), not its chunk
    int64_t startNs = 0;  // when the first wait went slow
    double nextMatchCheck = 0;
  };
  Status runCall(Call& call, size_t count, int root);
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

  std::unique_ptr<HostBlock> block_;
  std::vector<int> pids_;  // of every rank, all of this host
  ExecOptions options_;
  uint64_t calls_ = 0;
  uint64_t everyoneDone_ = 0;  // the least `done` of any rank, as last read
  std::vector<const void*> operands_;  // a call's chunks, one a rank
};

}  // namespace tutti
