// The executor: one interpreter for every plan over every transport. Like
// NCCL's primitives it walks a channel's program in iterations: iteration k
// runs every step once on the k-th chunk of that step's range. Each step thus
// sends at most one chunk per iteration, so a ring never fills its buffers
// with data the next rank cannot yet consume (no deadlock at any size), and
// ranks pipeline iterations as far as the slots allow. Connections are polled
// without blocking, so all channels of all queued operations advance together.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/reducer.h"
#include "src/common/call_record.h"
#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/plan/plan.h"
#include "transport/transport.h"

namespace tutti {

class Doorbell;

// Why a call timed out, when the ranks' published progress tells.
struct HangReport {
  int culprit = -1;  // the first rank to blame; -1: none found
  int culpritState = -1;  // its ProcessState; -1: not known
  bool mismatch = false;  // the culprit called something else under the same number
  bool certain = false;   // the culprit is stopped, called something else or never entered the call
  CallSignature culpritCall;  // when mismatch: its call, and this rank's under that number
  CallSignature ownCall;
  std::string text;  // empty when nothing was learned
};

// What an operation asks about the other ranks of its communicator: their
// connections (by the memory its buffers live in, channel and peer rank),
// their names, their failures and verdicts, and where a call ended. (Was
// `Links`: "link" meant five things.)
class Peers {
 public:
  virtual ~Peers() = default;
  virtual SendConnection* sendTo(Memory memory, int channel, int peer) = 0;
  virtual RecvConnection* recvFrom(Memory memory, int channel, int peer) = 0;
  virtual std::string describePeer(int peer) const = 0;
  // This rank gives up because `failedRank` failed (-1: a peer's connection
  // broke, which one is not known here): record it, and tell every peer.
  virtual void notifyFailure(int failedRank) = 0;
  // The failed rank some peer's failure notice names, waiting up to
  // `graceSeconds` for one to arrive; -1 when none does.
  virtual int reportedFailure(double graceSeconds) = 0;
  // Hangs. Asks every rank how far it got in the call this rank hangs in;
  // `event` says what happened here, `noticed` is the rank a peer's failure
  // notice names (-1: none).
  virtual HangReport explainHang(const std::string& event, int noticed) {
    (void)event;
    (void)noticed;
    return {};
  }
  // The call numbered `sequence` ended with `result` (the flight recorder).
  virtual void callEnded(uint64_t sequence, Code result) {
    (void)sequence;
    (void)result;
  }
  // Gives up on the report's culprit and tells every rank, not only this rank's peers.
  virtual void blame(const HangReport& why) { notifyFailure(why.culprit); }
  // The verdict another rank gave (culprit -1: none), and which rank gave it;
  // for a mismatch, its text names both calls.
  virtual HangReport verdictOfPeer(int* by) {
    (void)by;
    return {};
  }
  // Where this rank sleeps in poll() beside its sockets while it waits on
  // shared memory too (host-mates ring it); null: it has none.
  virtual const Doorbell* doorbell() const { return nullptr; }
};

// One operation ready to run: a plan and the buffers it applies to.
struct Work {
  const Plan* plan = nullptr;
  const void* input = nullptr;
  void* output = nullptr;
  void* finalOutput = nullptr;  // where final steps write instead (output is then scratch)
  DataType dtype = DataType::kFloat32;
  RedOp op = RedOp::kSum;
  int nranks = 1;  // divisor for avg
  size_t chunkBytes = 0;  // a chunk's data: every rank must use the same
  // The one-shot channel's slots, by OneShotLink: a phase of ChannelProgram::
  // phaseLinks cuts its data to its kind's instead of chunkBytes.
  OneShotSlots oneShotSlots[kOneShotLinkKinds] = {kOneShotSlotsInside, kOneShotSlotsAcross, kOneShotSlotsBoth};
  // Nonzero: every chunk carries this word (the call's signature, hashed)
  // in kChunkTagBytes after its data, and a chunk with another is refused
  // as another call's. Sends are then copies, never by reference.
  uint64_t tag = 0;
  int rank = 0;
  uint64_t sequence = 0;  // the communicator's call number, for errors
  Peers* peers = nullptr;
  Memory memory = Memory::kHost;  // device: every step is a kernel of the reducer's stream
  const std::atomic<bool>* abort = nullptr;
  SharedCallRecord* progress = nullptr;  // this rank's published progress (may be null)
};

struct ExecOptions {
  int spinCount = 2000;
  double timeoutSeconds = 300;
  // A call blocked this long asks the ranks what they called under its
  // number (again at twice that, and so on); 0: only at the timeout.
  double matchCheckSeconds = 1;
  // Ranks of several nodes sharing cores (containers or namespaces on one
  // kernel): a rank waiting on a socket yields its core this many rounds
  // before it sleeps in poll(). A sleeper wakes only when the scheduler gets
  // to it; a yielder is on the run queue when its data comes, and a rank
  // with work gets the core meanwhile. 0: sleep after a few rounds.
  int socketYieldRounds = 0;
  // Ranks outnumber the cores they share: a rank waiting on shared memory
  // (host buffers) yields its core this many rounds after its spins, then
  // sleeps until a peer it waits for moves, rather than taking a core from
  // a rank that computes. -1: a rank alone on its cores keeps polling, and
  // after many yields naps (Backoff).
  int sharedMemoryYieldRounds = -1;
  // Ranks outnumber their cores: a wait on shared memory (alone or beside
  // sockets) that has yielded this long sleeps, however few its rounds. A
  // yield that hands the core to a rank in its compute can last a scheduler
  // slice (milliseconds); data that comes meanwhile waits for the yielder's
  // turn, where a sleeper it wakes runs at once. Waits on sockets alone keep
  // their rounds (socketYieldRounds). -1: rounds alone decide.
  int yieldUsBeforeSleep = -1;
};

// Runs every Work to completion (or the first error). Works that share a
// connection run in the order given; the rest run concurrently.
Status execute(Work* works, size_t count, const Reducer& reducer, const ExecOptions& options);

}  // namespace tutti
