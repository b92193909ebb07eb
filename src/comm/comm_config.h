// The tunables one communicator runs with, read once at init and checked to
// be the same on every rank where a mismatch would corrupt data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "src/common/status.h"
#include "src/plan/layout.h"
#include "src/plan/tuner.h"
#include "transport/registry.h"

namespace tutti {

struct CommConfig {
  double timeoutSeconds = 300;
  size_t slotBytes = 128 << 10;  // one chunk
  int nslots = 8;
  int maxChannels = 2;           // rings connected at init
  bool channelsForced = false;   // TUTTI_NCHANNELS given: use exactly that many
  int spinCount = 2000;
  bool spinForced = false;       // TUTTI_SPIN_COUNT given: keep it even when oversubscribed
  bool shmDisabled = false;
  RingOrder ringOrder = RingOrder::kTopo;
  AlgoFilter algoFilter;
  std::string algoSpec;          // TUTTI_ALGO as given, for the consistency check
  NetKind net = NetKind::kSocket;  // TUTTI_NET, or the fastest usable here
  bool p2pDisabled = false;        // TUTTI_P2P_DISABLE
  bool leanWorker = false;         // TUTTI_DEVICE_WORKER=lean
  size_t deviceSlotBytes = 4 << 20;  // TUTTI_P2P_BUFFSIZE / NSTEPS: one chunk of a device call
  bool deterministic = false;        // TUTTI_DETERMINISTIC or tuttiConfig_t.deterministic
  double matchCheckSeconds = 1;      // TUTTI_MATCH_CHECK_MS
  bool checkCalls = false;           // TUTTI_CHECK_CALLS: compare every host call's arguments first
  bool measureLinks = true;          // TUTTI_MEASURE_LINKS: several nodes measure their links at init
  bool keepCallTimes = true;         // TUTTI_KEEP_CALL_TIMES: and keep large calls' times (tuning/kept_calls.h)
  bool nodeCores = true;             // TUTTI_NODE_CORES: nodes sharing a kernel's cores split them (cores/node_cores.h)
  int socketYieldRounds = 0;         // ExecOptions::socketYieldRounds
  int sharedMemoryYieldRounds = -1;  // ExecOptions::sharedMemoryYieldRounds
  int yieldUsBeforeSleep = -1;       // ExecOptions::yieldUsBeforeSleep

  static Result<CommConfig> fromEnv();
  // The part that must agree across ranks, as comparable bytes (no padding).
  // Transports check their own settings per connection.
  struct Shared {
    uint64_t slotBytes;
    int32_t nslots;
    int32_t maxChannels;
    int32_t shmDisabled;
    int32_t ringOrder;
    int32_t net;            // the network transport: both ends must use the same
    int32_t p2pDisabled;    // every rank lists the same transports
    uint64_t algoHash;
    uint64_t deviceSlotBytes;  // device chunks: both ends of a connection must agree
    int32_t deterministic;     // every rank must plan reductions alike
    int32_t measureLinks;      // every rank takes part in measuring, or none
    int32_t keepCallTimes;     // every rank adds rank 0's kept call times, or none
    int32_t padding;           // 0: the struct is compared as bytes
  };
  Shared shared() const;
  // Ranks outnumbering cores: a rank spinning for its peer keeps that peer off
  // the core it needs, so yield almost at once (unless told otherwise).
  // `ranksOnCores`: the ranks that run on these cores, of any network node.
  // `nodes`: network nodes of the communicator. Ranks of several nodes on
  // shared cores also yield on sockets before they sleep (measured: 2 x 2
  // namespace nodes, 8-byte tree all-reduce 55 -> 31 us); one host's calls
  // go through shared memory, which yields already. Waits on shared memory
  // sleep on the peer after a few yields, on one node or several.
  // `besideCompute` (tuttiConfig_t::callsBesideCompute): the caller's threads
  // compute while calls run, so every wait sleeps at once.
  void adaptToOversubscription(int ranksOnCores, int cores, int nodes, bool besideCompute = false);
};

}  // namespace tutti
