#include "src/plan/ring_planner.h"

namespace tutti {

size_t blockStart(size_t count, int n, int j, size_t elemSize) {
  if (j <= 0) return 0;
  if (j >= n) return count;
  size_t raw = static_cast<size_t>((static_cast<unsigned __int128>(count) * j) / n);
  size_t align = elemSize >= 64 ? 1 : 64 / elemSize;
  return raw / align * align;
}

namespace {

struct Slice {
  size_t begin;
  size_t count;
};

class StepWriter {
 public:
  explicit StepWriter(std::vector<Step>* steps) : steps_(steps) {}
  void add(StepKind kind, int recvPeer, int sendPeer, size_t in, size_t out, size_t count,
           bool final = false) {
    Step s;
    s.kind = kind;
    s.recvPeer = stepReceives(kind) ? recvPeer : -1;
    s.sendPeer = stepSends(kind) ? sendPeer : -1;
    s.inOffset = in;
    s.outOffset = out;
    s.count = count;
    s.final = final;
    steps_->push_back(s);
  }

 private:
  std::vector<Step>* steps_;
};

int mod(int a, int n) { return ((a % n) + n) % n; }

void planChannel(const RingRequest& r, int c, std::vector<Step>* steps) {
  const int n = r.nranks, p = r.rank;
  const int next = mod(p + 1, n), prev = mod(p - 1, n);
  const size_t es = r.elemSize;
  StepWriter w(steps);
  // This channel's part of [lo, lo + len).
  auto part = [&](size_t lo, size_t len) {
    size_t b = blockStart(len, r.nchannels, c, es), e = blockStart(len, r.nchannels, c + 1, es);
    return Slice{lo + b, e - b};
  };
  // This channel's part of block j when `total` elements are split over the ranks.
  auto block = [&](size_t total, int j) {
    size_t b = blockStart(total, n, j, es), e = blockStart(total, n, j + 1, es);
    return part(b, e - b);
  };

  switch (r.collective) {
    case Collective::kAllReduce: {
      if (n == 1) {
        Slice s = part(0, r.count);
        w.add(StepKind::kCopy, -1, -1, s.begin, s.begin, s.count, true);
        break;
      }
      // Reduce-scatter: block p travels the ring gathering partial sums...
      Slice s = block(r.count, p);
      w.add(StepKind::kSend, prev, next, s.begin, s.begin, s.count);
      for (int k = 1; k < n - 1; ++k) {
        s = block(r.count, mod(p - k, n));
        w.add(StepKind::kRecvReduceSend, prev, next, s.begin, s.begin, s.count);
      }
      // ...so block p+1 is complete here, and all-gather passes results on.
      s = block(r.count, mod(p + 1, n));
      w.add(StepKind::kRecvReduceCopySend, prev, next, s.begin, s.begin, s.count, true);
      for (int k = 1; k < n - 1; ++k) {
        s = block(r.count, mod(p + 1 - k, n));
        w.add(StepKind::kRecvCopySend, prev, next, s.begin, s.begin, s.count);
      }
      s = block(r.count, mod(p + 2, n));
      w.add(StepKind::kRecv, prev, next, s.begin, s.begin, s.count);
      break;
    }
    case Collective::kAllGather: {
      Slice s = part(0, r.count);
      if (n == 1) {
        w.add(StepKind::kCopy, -1, -1, s.begin, s.begin, s.count);
        break;
      }
      w.add(StepKind::kCopySend, prev, next, s.begin, p * r.count + s.begin, s.count);
      for (int k = 1; k < n - 1; ++k)
        w.add(StepKind::kRecvCopySend, prev, next, 0, mod(p - k, n) * r.count + s.begin, s.count);
      w.add(StepKind::kRecv, prev, next, 0, mod(p + 1, n) * r.count + s.begin, s.count);
      break;
    }
    case Collective::kBroadcast: {
      Slice s = part(0, r.count);
      int q = mod(p - r.root, n);  // distance from the root along the ring
      if (n == 1) w.add(StepKind::kCopy, -1, -1, s.begin, s.begin, s.count);
      else if (q == 0) w.add(StepKind::kCopySend, prev, next, s.begin, s.begin, s.count);
      else if (q == n - 1) w.add(StepKind::kRecv, prev, next, s.begin, s.begin, s.count);
      else w.add(StepKind::kRecvCopySend, prev, next, s.begin, s.begin, s.count);
      break;
    }
    case Collective::kReduce: {
      Slice s = part(0, r.count);
      int q = mod(p - r.root - 1, n);  // the chain starts after the root and ends at it
      if (n == 1) w.add(StepKind::kCopy, -1, -1, s.begin, s.begin, s.count, true);
      else if (q == 0) w.add(StepKind::kSend, prev, next, s.begin, s.begin, s.count);
      else if (q == n - 1)
        w.add(StepKind::kRecvReduceCopy, prev, next, s.begin, s.begin, s.count, true);
      else w.add(StepKind::kRecvReduceSend, prev, next, s.begin, s.begin, s.count);
      break;
    }
    case Collective::kReduceScatter: {
      Slice s = part(0, r.count);
      if (n == 1) {
        w.add(StepKind::kCopy, -1, -1, s.begin, s.begin, s.count, true);
        break;
      }
      // Block p-1 leaves here; after n-1 hops every rank holds its own block p,
      // fully reduced.
      w.add(StepKind::kSend, prev, next, mod(p - 1, n) * r.count + s.begin, 0, s.count);
      for (int k = 1; k < n - 1; ++k)
        w.add(StepKind::kRecvReduceSend, prev, next, mod(p - k - 1, n) * r.count + s.begin, 0,
              s.count);
      w.add(StepKind::kRecvReduceCopy, prev, next, p * r.count + s.begin, s.begin, s.count, true);
      break;
    }
    case Collective::kSend:
    case Collective::kRecv:
      break;
  }
}

}  // namespace

void buildRingPlan(const RingRequest& r, Plan* plan) {
  plan->collective = r.collective;
  if (r.collective == Collective::kSend || r.collective == Collective::kRecv) {
    plan->channels.resize(1);
    ChannelProgram& ch = plan->channels[0];
    ch.channel = kP2PChannel;
    ch.steps.clear();
    StepWriter w(&ch.steps);
    if (r.collective == Collective::kSend)
      w.add(StepKind::kSend, -1, r.peer, 0, 0, r.count);
    else
      w.add(StepKind::kRecv, r.peer, -1, 0, 0, r.count);
    return;
  }
  int nch = r.nchannels < 1 ? 1 : r.nchannels;
  plan->channels.resize(nch);
  RingRequest req = r;
  req.nchannels = nch;
  for (int c = 0; c < nch; ++c) {
    plan->channels[c].channel = c;
    plan->channels[c].steps.clear();
    planChannel(req, c, &plan->channels[c].steps);
  }
}

}  // namespace tutti
