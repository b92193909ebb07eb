#include "src/comm/tuning/link_probe.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "src/comm/communicator.h"
#include "src/comm/group.h"
#include "src/common/clock.h"

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

// Microseconds `call` takes: the mean of `calls` runs without the slowest
// third (one at least), after `warm` unmeasured ones (connections, pages).
// Ranks sharing cores make single runs wander by several times; a
// collective pays their wake-ups, not the best case.
Result<double> timeCalls(int warm, int calls, const std::function<Status()>& call) {
  for (int i = 0; i < warm; ++i) TUTTI_RETURN_IF_ERROR(call());
  std::vector<double> took(calls);
  for (double& t : took) {
    const int64_t t0 = nowNs();
    TUTTI_RETURN_IF_ERROR(call());
    t = static_cast<double>(nowNs() - t0) / 1e3;
  }
  std::sort(took.begin(), took.end());
  const int kept = calls < 2 ? calls : calls - std::max(1, calls / 3);
  double sum = 0;
  for (int i = 0; i < kept; ++i) sum += took[i];
  return sum / kept;
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
  TUTTI_ASSIGN_OR_RETURN(double big, timeCalls(kWarmupRounds, kBandwidthRounds, pass(kBandwidthBytes)));
  TUTTI_ASSIGN_OR_RETURN(double small, timeCalls(kWarmupRounds, kLatencyRounds, pass(8)));
  link.measured = true;
  link.streams = round.streams;
  link.latencyUs = small;
  // The big round's time less one latency, but never less than half of it:
  // both are averages of their own rounds.
  link.gbs = kBandwidthBytes / std::max(big - small, big / 2) / 1e3;
  return link;
}

}  // namespace

// The middle of what the ranks saw (those that measured: > 0), the same on
// every rank; 0 when none did.
double medianOf(std::vector<double> seen) {
  seen.erase(std::remove_if(seen.begin(), seen.end(), [](double v) { return v <= 0; }), seen.end());
  if (seen.empty()) return 0;
  std::sort(seen.begin(), seen.end());
  return seen[seen.size() / 2];
}

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
