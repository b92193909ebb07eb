// Large all-reduces' times, kept from one run of a job to the next of the
// same shape. The calibration at init times each algorithm up to a few MiB
// (src/comm/tuning/link_probe.h), where the sockets' buffers still hold much
// of a call; what a 64 MiB call costs shows once it has run. On 4 namespace
// nodes of one rank sharing 2 cores, rings and halving-doubling measured
// alike at 4 MiB, rings took up to 1.6x as long at 64 MiB, and launches still
// chose them now and then (bench/results/rings_on_one_rank_nodes.md,
// kept_call_times.md). And init's few calls, made just after the ranks met,
// can miss what the same size costs as calls come (4 x 1 veth: halving-
// doubling's 1 MiB timed at 0.93-1.18 ms, its calls 1.2-1.8). So rank 0
// notes the time of each all-reduce it ran from its algorithm's middle
// calibrated size on, by algorithm and size, writes them beside its
// topology cache at destroy (TUTTI_KEEP_CALL_TIMES), and the next
// communicator of the same shape adds them to its calibration: an
// algorithm is priced as it ran.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/common/status.h"
#include "src/plan/plan.h"
#include "src/plan/tuner.h"

namespace tutti {

// One algorithm's calls of about one size (a power of two, rounded): their
// mean size and time, and how many were timed.
struct KeptCall {
  int32_t algorithm = 0;  // an Algorithm of the cost model
  double bytes = 0;
  double us = 0;
  double calls = 0;
};

// At most this many are kept, and shared at init: a sweep from 64 KiB to
// 64 MiB by powers of two is 11 sizes, and a launch may run three
// algorithms across them.
constexpr int kMaxKeptCalls = 48;

// Whether an all-reduce of `bytes` by `a` is timed: from the middle size
// init calibrates it at, where a call's time is mostly its data.
bool worthKeeping(Algorithm a, size_t bytes);

// This run's calls, as they end: per algorithm and size class, the mean
// size and the typical time of the last kRecentCalls (typicalUs, as init
// reads its calibration). Rank 0's time of a call includes its wait for
// ranks that came late (still in their backward pass, or saving a
// checkpoint), and the slowest are dropped; a single fast one (a call rank
// 0 came to last, when the others had done its work) is one of ten.
// Recent calls follow a network that changed within the run.
class CallTimes {
 public:
  static constexpr int kRecentCalls = 15;
  void note(Algorithm a, size_t bytes, double us);
  std::vector<KeptCall> calls() const;

 private:
  struct Class {
    KeptCall call;  // its mean size and count; `us` unused
    std::array<double, kRecentCalls> recentUs{};
  };
  std::vector<Class> classes_;
};

// Earlier runs' calls with this run's: means weighted by calls, the earlier
// ones by kKeptWeight calls at most, so a changed network shows within a
// run or two. The largest sizes first when there are too many.
std::vector<KeptCall> mergeKeptCalls(const std::vector<KeptCall>& kept, const std::vector<KeptCall>& fresh);

// Adds each algorithm's kept calls to the all-reduce calibration, as
// measured over the model's prediction: at a size init measured, weighed
// with init's calls by count (the kept as kKeptWeight at most); at others (the largest kKeptPoints), as
// points of their own.
void addKeptCalls(const std::vector<KeptCall>& kept, TuneContext* tuning);

// What the times are kept for: the layout (NodeLayout::describe: every
// rank's node), the ranks sharing rank 0's cores and how many, the network
// and its stated rate, and the hash of every setting ranks must share.
std::string keptCallsShape(const std::string& layout, int sharing, int cores, const std::string& net, double gbps,
                           uint64_t settingsHash);

// The file: JSON naming the shape it was kept for. Read: only a file of
// this user's, of that shape, whose entries are all sane; else none.
std::string keptCallsPath(const std::string& dir, const std::string& shape);
std::vector<KeptCall> keptCallsFromJson(const std::string& text, const std::string& shape);
std::string keptCallsToJson(const std::vector<KeptCall>& calls, const std::string& shape);
std::vector<KeptCall> readKeptCalls(const std::string& path, const std::string& shape);
// Merged with what the file holds, written aside and renamed.
Status writeKeptCalls(const std::string& path, const std::string& shape, const std::vector<KeptCall>& fresh);

}  // namespace tutti
