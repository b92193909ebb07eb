// Ring algorithms as Steps. Positions on the ring decide who sends to whom;
// gathered and scattered blocks are still placed by rank.
#include "src/plan/planner.h"
#include "src/plan/plan_internal.h"

namespace tutti {

size_t blockStart(size_t count, int n, int j, size_t elemSize) {
  if (j <= 0) return 0;
  if (j >= n) return count;
  size_t raw = static_cast<size_t>((static_cast<unsigned __int128>(count) * j) / n);
  size_t align = elemSize >= 64 ? 1 : 64 / elemSize;
  return raw / align * align;
}

namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

void planRingChannel(const PlanRequest& r, int c, Plan* plan, size_t* used) {
  std::vector<Step>* steps = &newProgram(plan, c, used).steps;
  const int n = r.nranks;
  const std::vector<int>* ring = r.rings && !r.rings->empty() ? &(*r.rings)[c % r.rings->size()] : nullptr;
  auto at = [&](int pos) { return ring ? (*ring)[mod(pos, n)] : mod(pos, n); };
  auto positionOf = [&](int rank) {
    if (!ring) return rank;
    for (int i = 0; i < n; ++i)
      if ((*ring)[i] == rank) return i;
    return 0;
  };
  const int p = positionOf(r.rank);
  const int next = at(p + 1), prev = at(p - 1);
  const size_t es = r.elemSize;
  auto add = [&](StepKind kind, size_t in, size_t out, size_t count, bool final = false) {
    addStep(steps, kind, prev, next, in, out, count, final);
  };
  // This channel's part of [lo, lo + len).
  auto part = [&](size_t lo, size_t len) { return channelSlice(lo, len, r.nchannels, c, es); };
  // This channel's part of block j when `total` elements are split over the ranks.
  auto block = [&](size_t total, int j) {
    size_t b = blockStart(total, n, j, es), e = blockStart(total, n, j + 1, es);
    return part(b, e - b);
  };

  switch (r.collective) {
    case Collective::kAllReduce: {
      if (n == 1) {
        Slice s = part(0, r.count);
        add(StepKind::kCopy, s.begin, s.begin, s.count, true);
        break;
      }
      // Reduce-scatter: block p travels the ring gathering partial sums...
      Slice s = block(r.count, p);
      add(StepKind::kSend, s.begin, s.begin, s.count);
      for (int k = 1; k < n - 1; ++k) {
        s = block(r.count, mod(p - k, n));
        add(StepKind::kRecvReduceSend, s.begin, s.begin, s.count);
      }
      // ...so block p+1 is complete here, and all-gather passes results on.
      s = block(r.count, mod(p + 1, n));
      add(StepKind::kRecvReduceCopySend, s.begin, s.begin, s.count, true);
      for (int k = 1; k < n - 1; ++k) {
        s = block(r.count, mod(p + 1 - k, n));
        add(StepKind::kRecvCopySend, s.begin, s.begin, s.count);
      }
      s = block(r.count, mod(p + 2, n));
      add(StepKind::kRecv, s.begin, s.begin, s.count);
      break;
    }
    case Collective::kAllGather: {
      Slice s = part(0, r.count);
      if (n == 1) {
        add(StepKind::kCopy, s.begin, s.begin, s.count);
        break;
      }
      // The block of the rank k positions back arrives at step k.
      add(StepKind::kCopySend, s.begin, at(p) * r.count + s.begin, s.count);
      for (int k = 1; k < n - 1; ++k)
        add(StepKind::kRecvCopySend, 0, at(p - k) * r.count + s.begin, s.count);
      add(StepKind::kRecv, 0, at(p + 1) * r.count + s.begin, s.count);
      break;
    }
    case Collective::kBroadcast: {
      Slice s = part(0, r.count);
      int q = mod(p - positionOf(r.root), n);  // distance from the root along the ring
      if (n == 1) add(StepKind::kCopy, s.begin, s.begin, s.count);
      else if (q == 0) add(StepKind::kCopySend, s.begin, s.begin, s.count);
      else if (q == n - 1) add(StepKind::kRecv, s.begin, s.begin, s.count);
      else add(StepKind::kRecvCopySend, s.begin, s.begin, s.count);
      break;
    }
    case Collective::kReduce: {
      Slice s = part(0, r.count);
      int q = mod(p - positionOf(r.root) - 1, n);  // the chain starts after the root, ends at it
      if (n == 1) add(StepKind::kCopy, s.begin, s.begin, s.count, true);
      else if (q == 0) add(StepKind::kSend, s.begin, s.begin, s.count);
      else if (q == n - 1) add(StepKind::kRecvReduceCopy, s.begin, s.begin, s.count, true);
      else add(StepKind::kRecvReduceSend, s.begin, s.begin, s.count);
      break;
    }
    case Collective::kReduceScatter: {
      Slice s = part(0, r.count);
      if (n == 1) {
        add(StepKind::kCopy, s.begin, s.begin, s.count, true);
        break;
      }
      // The block of the rank one position back leaves here; after n-1 hops
      // every rank holds its own block, fully reduced.
      add(StepKind::kSend, at(p - 1) * r.count + s.begin, 0, s.count);
      for (int k = 1; k < n - 1; ++k)
        add(StepKind::kRecvReduceSend, at(p - k - 1) * r.count + s.begin, 0, s.count);
      add(StepKind::kRecvReduceCopy, r.rank * r.count + s.begin, s.begin, s.count, true);
      break;
    }
    case Collective::kSend:
    case Collective::kRecv:
      break;
  }
}

}  // namespace tutti
