// Why a call timed out, from what every rank published (CallRecord) and
// whether its process runs: the ranks that hold the others up (gone,
// stopped, called something else, or never entered the call) and who waits
// for them. Pure: the communicator gathers the facts, this words them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/comm/diagnosis/progress_service.h"
#include "src/exec/executor.h"

namespace tutti {

struct HangPeer {
  std::string host;
  int pid = 0;
  RankProgress progress;  // progress.rank is the peer's rank
};

// "tuttiAllReduce" for an allreduce record.
std::string apiCallName(int collective);
// "tuttiAllReduce(count 1024 float32, sum)": what a record says was called.
std::string describeCall(const CallSignature& c);
// Whether two ranks' calls agree on everything their kind uses.
bool sameCall(const CallSignature& a, const CallSignature& b);
// The earliest call number both records hold under which they differ (0: none).
uint64_t firstDifference(const CallRecord& a, const CallRecord& b, CallSignature* inA, CallSignature* inB);

// `mine` is this rank's record (its entered call is the one that hangs);
// `event` says what happened to it ("timed out on rank 3 after 30 s");
// `peers` holds every rank, itself included, indexed by rank.
// `noticed` is the rank a failure notice from a peer named (-1: none): the
// diagnosis of a rank that gave up first, when nothing nearer is known.
HangReport explainHang(int rank, const CallRecord& mine, const std::string& event,
                       const std::vector<HangPeer>& peers, int noticed = -1);

}  // namespace tutti
