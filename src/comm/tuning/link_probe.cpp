#include "src/comm/tuning/link_probe.h"

#include <algorithm>
#include <array>
#include <functional>
#include <vector>

#include "src/comm/communicator.h"
#include "src/comm/group.h"
#include "src/comm/tuning/typical_time.h"
#include "src/common/clock.h"
#include "src/plan/algorithms.h"

namespace tutti {

namespace {

constexpr int kWarmupRounds = 2;   // also makes the connections
constexpr int kLatencyRounds = 15;
constexpr int kBandwidthRounds = 5;
constexpr size_t kBandwidthBytes = 1 << 20;

// One round: send `bytes` to `next` and receive as many from `prev`, together.
Status passOn(Communicator& comm, int next, int prev, std::vector<char>& out, std::vector<char>& in, size_t bytes) {
  GroupCalls calls;
  CollectiveArgs send;
  send.collective = Collective::kSend;
  send.input = out.data();
  send.count = bytes;
  send.dtype = DataType::kUint8;
  send.root = next;
  send.internal = true;
  CollectiveArgs recv = send;
  recv.collective = Collective::kRecv;
  recv.input = nullptr;
  recv.output = in.data();
  recv.root = prev;
  calls.push_back({&comm, send, {}});
  calls.push_back({&comm, recv, {}});
  std::vector<Communicator*> failed;
  return runGroup(calls, &failed);
}

// Microseconds `call` takes over `calls` runs, after `warm` unmeasured ones
// (connections, pages): typicalUs, and meanWithoutStallsUs.
struct TimedCalls {
  double typicalUs = 0, meanUs = 0;
};
Result<TimedCalls> timeCalls(int warm, int calls, const std::function<Status()>& call) {
  for (int i = 0; i < warm; ++i) TUTTI_RETURN_IF_ERROR(call());
  std::vector<double> took(calls);
  for (double& t : took) {
    const int64_t t0 = nowNs();
    TUTTI_RETURN_IF_ERROR(call());
    t = static_cast<double>(nowNs() - t0) / 1e3;
  }
  return TimedCalls{typicalUs(took), meanWithoutStallsUs(took)};
}

// Microseconds an internal all-reduce of `bytes` takes on this rank.
Result<TimedCalls> timeAllReduce(Communicator& comm, size_t bytes, int calls) {
  std::vector<float> in(std::max<size_t>(bytes / sizeof(float), 1), 1.0f), out(in.size());
  CollectiveArgs call;
  call.collective = Collective::kAllReduce;
  call.input = in.data();
  call.output = out.data();
  call.count = in.size();
  call.internal = true;
  // Two unmeasured calls: the first makes a channel's connections.
  return timeCalls(2, calls, [&] { return runPlanned(&comm, call); });
}

// The middle of what the ranks saw (those that measured: > 0), the same on
// every rank; 0 when none did.
double medianOf(std::vector<double> seen) {
  seen.erase(std::remove_if(seen.begin(), seen.end(), [](double v) { return v <= 0; }), seen.end());
  if (seen.empty()) return 0;
  std::sort(seen.begin(), seen.end());
  return seen[seen.size() / 2];
}

// Latency and rate of one kind of link, as this rank saw them.
Result<MeasuredLink> measureRound(Communicator& comm, const LinkRound& round) {
  MeasuredLink link;
  if (round.next < 0) return link;
  std::vector<char> out(kBandwidthBytes, 1), in(kBandwidthBytes);
  auto pass = [&](size_t bytes) { return [&, bytes] { return passOn(comm, round.next, round.prev, out, in, bytes); }; };
  // Big messages first: on a link shaped by tc, the first few dozen small
  // messages of new connections took 1 ms each where the same messages took
  // 12 us once bulk data had passed (and did in every call after init).
  TUTTI_ASSIGN_OR_RETURN(TimedCalls bigCalls, timeCalls(kWarmupRounds, kBandwidthRounds, pass(kBandwidthBytes)));
  TUTTI_ASSIGN_OR_RETURN(TimedCalls smallCalls, timeCalls(kWarmupRounds, kLatencyRounds, pass(8)));
  const double big = bigCalls.typicalUs, small = smallCalls.typicalUs;
  link.measured = true;
  link.streams = round.streams;
  link.latencyUs = small;
  // The big round's time less one latency, but never less than half of it:
  // both are averages of their own rounds.
  link.gbs = kBandwidthBytes / std::max(big - small, big / 2) / 1e3;
  return link;
}

}  // namespace

LinkRound intraRound(const NodeLayout& layout, int rank) {
  const std::vector<int>& mine = layout.ranksOf(layout.nodeOf(rank));
  const int n = static_cast<int>(mine.size());
  if (n < 2) return {};
  const int at = static_cast<int>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
  return {mine[(at + 1) % n], mine[(at + n - 1) % n], n};
}

LinkRound netRound(const NodeLayout& layout, int rank) {
  const int nodes = layout.nnodes();
  if (nodes < 2) return {};
  bool even = true;
  for (int k = 1; k < nodes; ++k) even &= layout.ranksOf(k).size() == layout.ranksOf(0).size();
  const int node = layout.nodeOf(rank);
  const std::vector<int>& mine = layout.ranksOf(node);
  const int at = static_cast<int>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
  if (!even && at != 0) return {};
  return {layout.ranksOf((node + 1) % nodes)[at], layout.ranksOf((node + nodes - 1) % nodes)[at],
          even ? static_cast<int>(mine.size()) : 1};
}

Result<MeasuredLinks> measureLinks(Communicator& comm) {
  const NodeLayout& layout = comm.layout();
  MeasuredLinks links;
  if (layout.nnodes() < 2) return links;
  // Every rank takes part in both rounds (or sits one out) in the same order.
  TUTTI_ASSIGN_OR_RETURN(MeasuredLink intra, measureRound(comm, intraRound(layout, comm.rank())));
  TUTTI_ASSIGN_OR_RETURN(MeasuredLink net, measureRound(comm, netRound(layout, comm.rank())));
  // Every rank's figures, gathered: the median of those that measured, the
  // same on every rank.
  struct Seen {
    double intraUs, intraGBs, netUs, netGBs, netStreams;
  };
  std::vector<Seen> all(comm.size());
  all[comm.rank()] = {intra.measured ? intra.latencyUs : 0, intra.measured ? intra.gbs : 0,
                      net.measured ? net.latencyUs : 0, net.measured ? net.gbs : 0,
                      static_cast<double>(net.streams)};
  TUTTI_RETURN_IF_ERROR(comm.bootstrap().allgather(all.data(), sizeof(Seen)));
  auto median = [&](double Seen::*us, double Seen::*gbs, MeasuredLink* link) {
    std::vector<double> lat, rate;
    for (const Seen& s : all) {
      lat.push_back(s.*us);
      rate.push_back(s.*us > 0 ? s.*gbs : 0);
    }
    link->latencyUs = medianOf(lat);
    link->gbs = medianOf(rate);
    link->measured = link->latencyUs > 0;
  };
  median(&Seen::intraUs, &Seen::intraGBs, &links.intra);
  median(&Seen::netUs, &Seen::netGBs, &links.net);
  for (const Seen& s : all) links.net.streams = std::max(links.net.streams, static_cast<int>(s.netStreams));
  return links;
}

int calibrationCalls(double bytes) {
  // Enough calls that one slow draw (a rank off its core) does not set the
  // level: 3 of 64 KiB once measured a tree at 8x its usual time.
  return bytes < (64 << 10) ? 20 : bytes <= (1 << 20) ? 8 : 4;
}

Status calibrateAllReduce(Communicator& comm, TuneContext* tuning) {
  constexpr int kPoints = TuneContext::kCalibrationPoints;
  // 8 bytes (a ring's blocks mostly empty), a cache line a rank (every
  // block full), a middle size (the model's shape between is the least
  // sure), and where the algorithm's bandwidth shows within a few ms.
  const double lineEach = 64.0 * comm.size();
  auto sizesOf = [lineEach](const AlgorithmEntry& e) {
    return std::array<double, kPoints>{8, lineEach, e.calibrationBytes[0], e.calibrationBytes[1]};
  };
  const TuneContext model = *tuning;
  auto only = [&model](Algorithm a) { return restrictedTo(model, a); };
  struct Seen {
    double us[kNumAlgorithms][kPoints];  // typical; 0: not measured
    double meanUs[kNumAlgorithms][kPoints];
  };
  std::vector<Seen> all(comm.size());
  Seen& mine = all[comm.rank()];
  for (int i = 0; i < kNumAlgorithms; ++i) {
    const AlgorithmEntry& entry = algorithmEntry(static_cast<Algorithm>(i));
    const std::array<double, kPoints> bytes = sizesOf(entry);
    std::fill(std::begin(mine.us[i]), std::end(mine.us[i]), 0.0);
    std::fill(std::begin(mine.meanUs[i]), std::end(mine.meanUs[i]), 0.0);
    if (!model.filter.allows(Collective::kAllReduce, entry.id)) continue;
    // Whether the model would run it at all (a tree needs several nodes, one-shot few ranks).
    const TuneChoice runs = tune(only(entry.id), Collective::kAllReduce,
                                 static_cast<size_t>(bytes[kPoints - 1]));
    if (runs.algorithm != entry.id || runs.predictedUs >= 1e29) continue;
    comm.setTuning(only(entry.id));
    for (int p = 0; p < kPoints; ++p) {
      TUTTI_ASSIGN_OR_RETURN(TimedCalls timed,
                             timeAllReduce(comm, static_cast<size_t>(bytes[p]), calibrationCalls(bytes[p])));
      mine.us[i][p] = timed.typicalUs;
      mine.meanUs[i][p] = timed.meanUs;
    }
  }
  TUTTI_RETURN_IF_ERROR(comm.bootstrap().allgather(all.data(), sizeof(Seen)));
  *tuning = model;
  // Every rank's every run of calls, the same factor on every rank.
  std::vector<std::pair<double, double>> runs;
  for (const Seen& s : all)
    for (int i = 0; i < kNumAlgorithms; ++i)
      for (int p = 0; p < kPoints; ++p) runs.emplace_back(s.us[i][p], s.meanUs[i][p]);
  tuning->slowDrawFactor = slowDrawFactor(runs);
  for (int i = 0; i < kNumAlgorithms; ++i) {
    const AlgorithmEntry& entry = algorithmEntry(static_cast<Algorithm>(i));
    const std::array<double, kPoints> bytes = sizesOf(entry);
    TuneContext::Calibration k;
    std::vector<std::pair<double, double>> own;
    for (const Seen& s : all)
      for (int p = 0; p < kPoints; ++p) own.emplace_back(s.us[i][p], s.meanUs[i][p]);
    for (int p = 0; p < kPoints; ++p) {
      std::vector<double> us;
      for (const Seen& s : all) us.push_back(s.us[i][p]);
      const double measured = medianOf(us);
      if (measured <= 0) break;
      k.bytes[p] = bytes[p];
      k.us[p] = measured;
      k.calls[p] = calibrationCalls(bytes[p]);
      k.ratio[p] = measured / tune(only(entry.id), Collective::kAllReduce,
                                   static_cast<size_t>(bytes[p])).predictedUs;
      k.points = p + 1;
    }
    if (k.points > 0) k.slowDraw = slowDrawFactor(own);
    tuning->allReduce[i] = k;
  }
  comm.setTuning(*tuning);
  return Status::Ok();
}

void applyMeasuredLinks(const MeasuredLinks& links, TuneContext* t) {
  // Measured with every rank busy: ranks outnumbering cores are in the figures.
  // A chunk's hand-over costs a wake-up of its own where ranks wait by
  // sleeping: half a measured trip.
  if (links.intra.measured) {
    t->intra.latencyUs = links.intra.latencyUs;
    t->intra.chunkOverheadUs = std::max(t->intra.chunkOverheadUs, links.intra.latencyUs / 2);
    t->intra.channelGBs = links.intra.gbs;
    t->intra.linkGBs = std::max(t->intra.linkGBs, links.intra.gbs);
  }
  if (links.net.measured) {
    t->net.latencyUs = links.net.latencyUs;
    t->net.chunkOverheadUs = std::max(t->net.chunkOverheadUs, links.net.latencyUs / 2);
    t->net.channelGBs = links.net.gbs;
    // A node's ranks streamed at once through its link.
    t->net.linkGBs = links.net.gbs * links.net.streams;
  }
}

}  // namespace tutti
