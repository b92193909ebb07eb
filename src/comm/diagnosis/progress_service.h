// The side channel of hangs. A rank that timed out asks each other host
// what its ranks published (ProgressBoard) and whether their processes run,
// are stopped or gone: any live rank of a host answers for a host-mate that
// is stopped. It then tells every rank which rank it blames (a verdict),
// so that all of them give up at once, naming the same rank, instead of
// each at its own timeout when the ranks that knew may have exited. One
// thread per process and address, started with the first communicator; a
// query that is malformed or too slow is dropped.
#pragma once

#include <cstdint>
#include <vector>

#include "src/bootstrap/rank_info.h"
#include "src/common/call_record.h"
#include "src/common/clock.h"
#include "src/common/process_watch.h"
#include "src/common/socket.h"

namespace tutti {

struct RankOnHost {
  int32_t rank;
  int32_t pid;
};

// Which rank a rank blamed when it timed out, and in what state it saw it.
struct Verdict {
  int32_t culprit = -1;  // -1: no verdict
  int32_t by = -1;
  int32_t culpritState = -1;  // ProcessState; -1: its host did not answer
  int32_t mismatch = 0;       // 1: the culprit called something else under one number:
  CallSignature culpritCall;  // what it called,
  CallSignature byCall;       // and what `by` called
};

// What is known of one rank.
struct RankProgress {
  int32_t rank = -1;
  int32_t answered = 0;   // 0: nobody on its host answered
  int32_t state = 0;      // ProcessState, when answered
  int32_t hasRecord = 0;  // 0: it published nothing (no shared memory, or gone)
  CallRecord record;
};

// What this process would answer about a rank of this host.
RankProgress lookUpLocal(uint64_t commMagic, const RankOnHost& r);

class ProgressService {
 public:
  // Ranks one query may ask about; more are split over several.
  static constexpr int kMaxRanksPerQuery = 64;
  // Serves on the IP of `address` (once per address and process); the port.
  static Result<uint16_t> listenOn(const SocketAddress& address);
  // Asks the service at `address` about ranks of its host.
  static Result<std::vector<RankProgress>> ask(const SocketAddress& address, uint64_t commMagic,
                                               const std::vector<RankOnHost>& ranks, Deadline deadline);
  // Tells the process serving at `address` the verdict.
  static Status tell(const SocketAddress& address, uint64_t commMagic, const Verdict& v, Deadline deadline);
  // The first verdict a rank gave on communicator `commMagic`. Cheap when
  // there is none: ranks poll it while they wait.
  static Verdict verdict(uint64_t commMagic);
  static void recordVerdict(uint64_t commMagic, const Verdict& v);
};

// What every rank of `ranks` published for the communicator `commMagic`:
// this host's ranks read directly, each other host asked through the first
// of its ranks whose service answers, within `seconds` in all.
std::vector<RankProgress> askEveryRank(const std::vector<RankInfo>& ranks, int self, uint64_t commMagic,
                                       double seconds);
// Tells every process of `ranks` (this one included) the verdict of `v.by`.
void tellEveryRank(const std::vector<RankInfo>& ranks, uint64_t commMagic, const Verdict& v, double seconds);

}  // namespace tutti
