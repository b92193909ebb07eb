// The cost model: predicts how long each algorithm takes for a call, from the
// node layout and per-link costs, and picks the algorithm, channel count and
// chunk size. TUTTI_ALGO restricts the algorithms (NCCL's grammar);
// TUTTI_NCHANNELS fixes the channel count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "src/common/status.h"
#include "src/plan/layout.h"
#include "src/plan/plan.h"

namespace tutti {

constexpr int kNumCollectives = 5;  // allreduce .. reducescatter: the ones with algorithms

// Which algorithms each collective may use. Parsed from NCCL's grammar:
// "ring,tree", "^tree", "allreduce:tree;broadcast:ring" (case does not matter).
class AlgoFilter {
 public:
  AlgoFilter();
  static Result<AlgoFilter> parse(const std::string& spec);
  bool allows(Collective c, Algorithm a) const;

 private:
  uint8_t allowed_[kNumCollectives];  // bit per Algorithm
};

// The two-level all-reduces (two_level_plan.cpp) send at most this much a
// rank of a node. Where a node's link limits they win at any size (2 x 2
// ranks on 4 Gbit/s links: 16 MiB in 41 ms where rings took 53), so the
// model decides up to the sizes the calibration's shape still covers.
// Swapping whole blocks across two nodes moves what halving and doubling
// moves in one round instead of two (2 x 2 on veth, 4 MiB, four rounds
// before tagged sends went by reference: 7.7-11.2 ms against 8.9-11.3,
// bench/results/tagged_sends_and_two_level.md); past two nodes it moves
// more, and the model weighs it.
constexpr double kTwoLevelMaxBytes = 64 << 20;

// What one core's memcpy moves on commodity hosts (this VM: 22-26 GB/s at
// 64 KiB): the host block's copies.
constexpr double kOneCoreCopyGBs = 20.0;

// What one kind of link costs (microseconds, GB/s per direction).
struct LinkCost {
  double latencyUs;      // one hop for the first byte, wake-up included
  double chunkOverheadUs;  // per chunk per step: syscalls, flags, bookkeeping
  double channelGBs;     // what one channel (one thread, one stream) can drive
  double linkGBs;        // what the link carries in all
};

// Everything the model needs about the communicator; call-independent.
struct TuneContext {
  int nranks = 1;
  int nnodes = 1;
  int ranksPerNode = 1;
  int ringCrossings = 0;  // node crossings of one ring
  int treeDepth = 0;      // node edges from the deepest leaf to the root
  bool nodesAlike = false;  // twoLevelFits(layout, 1): every node the same power of two of ranks
  LinkCost intra{};
  LinkCost net{};
  int maxChannels = 2;
  bool channelsForced = false;
  size_t maxChunkBytes = 128 << 10;
  AlgoFilter filter;
  // One host, shared memory: one-shot calls whose input fits a slot meet in
  // the host block (src/comm/small_calls/small_calls.h), a cache line's trip with no
  // connection or chunk bookkeeping.
  bool hostBlock = false;
  // What a host call costs in a run of calls over its typical time: the
  // slow draws of ranks sharing cores (a rank off its core while the others
  // wait), measured at init (src/comm/tuning/typical_time.h). The algorithms
  // are ranked by their typical times, the slow draws being the machine's,
  // and every prediction carries this factor: ranked by each algorithm's
  // own mean at 1 MiB, 3 x 2 namespace nodes chose trees for 4-64 MiB calls
  // at 1.1-1.5x halving-doubling's time (bench/results/calibration_mean.md).
  // An all-reduce algorithm init timed carries its own (Calibration::slowDraw).
  double slowDrawFactor = 1;
  // Measured (src/comm/tuning/link_probe.h): an all-reduce's time by algorithm at
  // a few sizes, over what the model predicted for it. Ranks sharing cores
  // pay wake-ups, copies and reductions on those cores that no link figure
  // holds; the model keeps the shape and the measurements set the level.
  // Earlier runs' calls (src/comm/tuning/kept_calls.h) weigh in at the
  // measured sizes and add up to kKeptPoints sizes between and past them:
  // every power of two from a 1 MiB calibration to 256 MiB.
  static constexpr int kCalibrationPoints = 4;
  static constexpr int kKeptPoints = 8;
  static constexpr int kMaxPoints = kCalibrationPoints + kKeptPoints;
  struct Calibration {
    int points = 0;  // 0: not measured
    double bytes[kMaxPoints] = {};  // increasing
    double us[kMaxPoints] = {};     // measured
    double ratio[kMaxPoints] = {};  // measured / predicted
    double calls[kMaxPoints] = {};  // how many calls `us` is the typical time of
    bool kept[kMaxPoints] = {};     // earlier runs' calls are in it
    // Its calls' mean over their typical time at init (slowDrawFactor's
    // reading of this algorithm's runs alone; 0: not measured). The slow
    // draws differ by algorithm: on 4 x 1 namespace nodes with 4 Gbit/s
    // links, init timed recursive doubling's calls at 1.27-1.33x their
    // typical time, rings' and halving-doubling's at 1.03-1.05x, the
    // machine's median 1.11-1.12x (bench/results/slow_draws_by_algorithm.md).
    double slowDraw = 0;
  };
  Calibration allReduce[kNumAlgorithms];

  // Costs from the layout: shared memory inside nodes, sockets between them,
  // hops made dearer when ranks outnumber cores.
  static TuneContext fromLayout(const NodeLayout& layout, const std::vector<int>& ring,
                                int maxChannels, bool channelsForced, size_t maxChunkBytes);
};

// `t` with the model allowed only `a` for every collective: what a
// calibration times and sets its measurements against.
TuneContext restrictedTo(const TuneContext& t, Algorithm a);

// predictUs with the all-reduce calibration applied (TuneContext::allReduce).
double calibratedUs(const TuneContext& ctx, Collective c, size_t bytes, Algorithm a, int nchannels,
                    size_t chunkBytes);

struct TuneChoice {
  Algorithm algorithm = Algorithm::kRing;
  int nchannels = 1;
  size_t chunkBytes = 0;
  double predictedUs = 0;
};

// Predicted time of one call moving `bytes` (NCCL's size: the larger of the
// send and receive buffers) with the given settings.
double predictUs(const TuneContext& ctx, Collective c, size_t bytes, Algorithm a, int nchannels,
                 size_t chunkBytes);

// The fastest allowed settings. Collectives without a tree use rings.
TuneChoice tune(const TuneContext& ctx, Collective c, size_t bytes, bool onDevice = false);

}  // namespace tutti
