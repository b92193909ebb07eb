#include "src/comm/tuning/calibration.h"

#include <algorithm>
#include <array>
#include <vector>

#include "src/comm/communicator.h"
#include "src/comm/group.h"
#include "src/comm/tuning/link_probe.h"
#include "src/common/clock.h"
#include "src/plan/algorithms.h"

namespace tutti {

namespace {

constexpr int kPoints = TuneContext::kCalibrationPoints;
// Each algorithm is timed in kRounds batches of back-to-back calls, the
// algorithms' batches taking turns. On a shared machine a call's time
// drifts over the second calibration takes (4 x 1 namespace nodes: a ring
// at 8 B went from 40 to 60 us halfway), and measured one after another
// the algorithms met different drifts: rd at 8 B measured 1.9x its model
// and lost to a ring 1.2x slower in every later call. Batches, not single
// calls, because ranks sharing cores alternate fast and slow calls (23 and
// 78 us), and a user's loop of calls pays both.
constexpr int kRounds = 4;
constexpr size_t kSmallBytes = 64 << 10;

// Calls a batch: as many calls in all as single timed calls took before (20
// small, 8 up to 1 MiB, 4 beyond).
int batchCalls(size_t bytes) { return bytes < kSmallBytes ? 5 : bytes <= (1 << 20) ? 2 : 1; }

// The mean of the middle one or two.
double middleOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Internal float all-reduces of up to `maxBytes` on buffers kept for the calibration.
class CalibrationCalls {
 public:
  CalibrationCalls(Communicator* comm, size_t maxBytes)
      : comm_(comm), in_(std::max<size_t>(maxBytes / sizeof(float), 1), 1.0f), out_(in_.size()) {}
  Status run(size_t bytes) {
    CollectiveArgs call;
    call.collective = Collective::kAllReduce;
    call.input = in_.data();
    call.output = out_.data();
    call.count = std::max<size_t>(bytes / sizeof(float), 1);
    call.internal = true;
    return runPlanned(comm_, call);
  }
  // Microseconds a call of a batch took.
  Result<double> batch(size_t bytes) {
    const int calls = batchCalls(bytes);
    const int64_t t0 = nowNs();
    for (int i = 0; i < calls; ++i) TUTTI_RETURN_IF_ERROR(run(bytes));
    return static_cast<double>(nowNs() - t0) / 1e3 / calls;
  }

 private:
  Communicator* comm_;
  std::vector<float> in_, out_;
};

}  // namespace

Status calibrateAllReduce(Communicator& comm, TuneContext* tuning) {
  // 8 bytes (a ring's blocks mostly empty), a cache line a rank (every
  // block full), a middle size (the model's shape between is the least
  // sure), and where the algorithm's bandwidth shows within a few ms.
  const double lineEach = 64.0 * comm.size();
  auto sizesOf = [lineEach](Algorithm a) {
    const AlgorithmEntry& e = algorithmEntry(a);
    return std::array<size_t, kPoints>{8, static_cast<size_t>(lineEach), static_cast<size_t>(e.calibrationBytes[0]),
                                       static_cast<size_t>(e.calibrationBytes[1])};
  };
  const TuneContext model = *tuning;
  auto only = [&model](Algorithm a) { return restrictedTo(model, a); };
  // The algorithms the model would run here (a tree needs several nodes, one-shot few ranks).
  std::vector<Algorithm> timed;
  size_t maxBytes = 0;
  for (int i = 0; i < kNumAlgorithms; ++i) {
    const Algorithm a = static_cast<Algorithm>(i);
    if (!model.filter.allows(Collective::kAllReduce, a)) continue;
    const TuneChoice runs = tune(only(a), Collective::kAllReduce, sizesOf(a)[kPoints - 1]);
    if (runs.algorithm != a || runs.predictedUs >= 1e29) continue;
    timed.push_back(a);
    maxBytes = std::max(maxBytes, sizesOf(a)[kPoints - 1]);
  }
  struct Seen {
    double us[kNumAlgorithms][kPoints];  // 0: not measured
  };
  std::vector<Seen> all(comm.size());
  Seen& mine = all[comm.rank()];
  std::fill(&mine.us[0][0], &mine.us[0][0] + kNumAlgorithms * kPoints, 0.0);
  CalibrationCalls calls(&comm, maxBytes);
  for (int p = 0; p < kPoints; ++p) {
    // Two unmeasured calls each: the first makes a channel's connections.
    for (Algorithm a : timed) {
      comm.setTuning(only(a));
      for (int i = 0; i < 2; ++i) TUTTI_RETURN_IF_ERROR(calls.run(sizesOf(a)[p]));
    }
    std::vector<double> took[kNumAlgorithms];
    for (int round = 0; round < kRounds; ++round)
      for (size_t j = 0; j < timed.size(); ++j) {  // each round in another order
        const Algorithm a = timed[(j + round) % timed.size()];
        const size_t bytes = sizesOf(a)[p];
        comm.setTuning(only(a));
        // The switch emptied the planner's cache: a small call's plan is not what is timed.
        if (bytes < kSmallBytes) TUTTI_RETURN_IF_ERROR(calls.run(bytes));
        TUTTI_ASSIGN_OR_RETURN(double us, calls.batch(bytes));
        took[static_cast<int>(a)].push_back(us);
      }
    for (Algorithm a : timed) mine.us[static_cast<int>(a)][p] = middleOf(took[static_cast<int>(a)]);
  }
  TUTTI_RETURN_IF_ERROR(comm.bootstrap().allgather(all.data(), sizeof(Seen)));
  *tuning = model;
  for (Algorithm a : timed) {
    const int i = static_cast<int>(a);
    TuneContext::Calibration k;
    for (int p = 0; p < kPoints; ++p) {
      std::vector<double> us;
      for (const Seen& s : all) us.push_back(s.us[i][p]);
      const double measured = medianOf(us);
      if (measured <= 0) break;
      k.bytes[p] = static_cast<double>(sizesOf(a)[p]);
      k.us[p] = measured;
      k.ratio[p] = measured / tune(only(a), Collective::kAllReduce, sizesOf(a)[p]).predictedUs;
      k.points = p + 1;
    }
    tuning->allReduce[i] = k;
  }
  comm.setTuning(*tuning);
  return Status::Ok();
}

}  // namespace tutti
