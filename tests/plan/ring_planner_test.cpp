// Ring plans, checked two ways without any network: structurally (every send
// has a matching receive of the same size, in order) and by running every
// rank's plan through the real executor over in-memory connections, one
// thread for all ranks, with tiny slots so chunking and pipelining are
// exercised at every size.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <numeric>
#include <vector>

#include "src/exec/executor.h"
#include "src/plan/ring_planner.h"

namespace tutti {
namespace {

// A slot ring shared by one sender and one receiver, in this process.
struct MemoryPipe {
  size_t slotBytes;
  int nslots;
  std::vector<std::vector<char>> slots;
  std::vector<size_t> sizes;
  uint64_t posted = 0, consumed = 0;
  MemoryPipe(size_t bytes, int n) : slotBytes(bytes), nslots(n), slots(n, std::vector<char>(bytes)), sizes(n) {}
};

class MemorySend final : public SendConnection {
 public:
  explicit MemorySend(MemoryPipe* p) : p_(p) {}
  void* acquire(size_t* cap) override {
    if (p_->posted - p_->consumed >= static_cast<uint64_t>(p_->nslots)) return nullptr;
    *cap = p_->slotBytes;
    return p_->slots[p_->posted % p_->nslots].data();
  }
  Status post(size_t bytes) override {
    p_->sizes[p_->posted % p_->nslots] = bytes;
    ++p_->posted;
    return Status::Ok();
  }
  Status progress() override { return Status::Ok(); }
  bool flushed() const override { return true; }
  Status checkPeer() override { return Status::Ok(); }
  void notifyFailure(int) override {}
  int reportedFailure() const override { return -1; }

 private:
  MemoryPipe* p_;
};

class MemoryRecv final : public RecvConnection {
 public:
  explicit MemoryRecv(MemoryPipe* p) : p_(p) {}
  const void* peek(size_t* bytes) override {
    if (p_->consumed == p_->posted) return nullptr;
    *bytes = p_->sizes[p_->consumed % p_->nslots];
    return p_->slots[p_->consumed % p_->nslots].data();
  }
  Status release() override {
    ++p_->consumed;
    return Status::Ok();
  }
  Status progress() override { return Status::Ok(); }
  Status checkPeer() override { return Status::Ok(); }
  void notifyFailure(int) override {}
  int reportedFailure() const override { return -1; }

 private:
  MemoryPipe* p_;
};

// n ranks' ring connections: pipe[c][r] carries rank r -> r+1 on channel c.
class MemoryRing {
 public:
  MemoryRing(int n, int channels, size_t slotBytes, int nslots) : n_(n) {
    for (int c = 0; c < channels; ++c)
      for (int r = 0; r < n; ++r) {
        pipes_.push_back(std::make_unique<MemoryPipe>(slotBytes, nslots));
        sends_.push_back(std::make_unique<MemorySend>(pipes_.back().get()));
        recvs_.push_back(std::make_unique<MemoryRecv>(pipes_.back().get()));
      }
    for (int r = 0; r < n; ++r) links_.push_back(std::make_unique<RankLinks>(this, r));
  }
  Links* links(int rank) { return links_[rank].get(); }

 private:
  struct RankLinks final : Links {
    RankLinks(MemoryRing* ring, int rank) : ring(ring), rank(rank) {}
    SendConnection* sendTo(int c, int peer) override {
      EXPECT_EQ(peer, (rank + 1) % ring->n_);
      return ring->sends_[c * ring->n_ + rank].get();
    }
    RecvConnection* recvFrom(int c, int peer) override {
      EXPECT_EQ(peer, (rank - 1 + ring->n_) % ring->n_);
      return ring->recvs_[c * ring->n_ + peer].get();
    }
    std::string describePeer(int peer) const override { return "rank " + std::to_string(peer); }
    void notifyFailure(int) override {}
    MemoryRing* ring;
    int rank;
  };
  int n_;
  std::vector<std::unique_ptr<MemoryPipe>> pipes_;
  std::vector<std::unique_ptr<MemorySend>> sends_;
  std::vector<std::unique_ptr<MemoryRecv>> recvs_;
  std::vector<std::unique_ptr<RankLinks>> links_;
};

// Runs `coll` on int32 data where rank r's input element i is r*1000003 + i,
// and returns every rank's output.
std::vector<std::vector<int32_t>> simulate(Collective coll, int n, size_t count, int channels,
                                           int root, bool inPlace, RedOp op = RedOp::kSum) {
  size_t inElems = coll == Collective::kReduceScatter ? count * n : count;
  size_t outElems = coll == Collective::kAllGather ? count * n : count;
  MemoryRing ring(n, channels, 64, 3);  // 16 elements per chunk, 3 slots
  std::vector<std::vector<int32_t>> in(n), out(n, std::vector<int32_t>(outElems + inElems, -1));
  std::vector<Plan> plans(n);
  std::vector<Work> works(n);
  for (int r = 0; r < n; ++r) {
    in[r].resize(inElems);
    for (size_t i = 0; i < inElems; ++i) in[r][i] = static_cast<int32_t>(r * 1000003 + i);
    RingRequest req{coll, n, r, root, count, channels, -1, 4};
    buildRingPlan(req, &plans[r]);
    Work& w = works[r];
    w.plan = &plans[r];
    w.dtype = DataType::kInt32;
    w.op = op;
    w.nranks = n;
    w.rank = r;
    w.links = ring.links(r);
    w.chunkBytes = 64;
    if (inPlace) {
      size_t at = coll == Collective::kAllGather ? r * count : 0;
      std::copy(in[r].begin(), in[r].end(), out[r].begin() + at);
      w.input = out[r].data() + at;
      w.output = coll == Collective::kReduceScatter ? out[r].data() + r * count : out[r].data();
    } else {
      w.input = in[r].data();
      w.output = out[r].data();
    }
  }
  Status st = execute(works.data(), works.size(), hostReducer(), ExecOptions{0, 10});
  EXPECT_TRUE(st.ok()) << st.message();
  for (int r = 0; r < n; ++r) {
    if (inPlace && coll == Collective::kReduceScatter)
      out[r].erase(out[r].begin(), out[r].begin() + r * count);
    out[r].resize(outElems);
  }
  return out;
}

int32_t input(int r, size_t i) { return static_cast<int32_t>(r * 1000003 + i); }

struct Shape {
  int n;
  size_t count;
  int channels;
};

class RingPlanSim : public ::testing::TestWithParam<Shape> {};

TEST_P(RingPlanSim, AllCollectivesMatchDefinitions) {
  const Shape s = GetParam();
  for (bool inPlace : {false, true}) {
    int root = s.n > 1 ? s.n - 1 : 0;
    auto ar = simulate(Collective::kAllReduce, s.n, s.count, s.channels, 0, inPlace);
    auto ag = simulate(Collective::kAllGather, s.n, s.count, s.channels, 0, inPlace);
    auto bc = simulate(Collective::kBroadcast, s.n, s.count, s.channels, root, inPlace);
    auto rd = simulate(Collective::kReduce, s.n, s.count, s.channels, root, inPlace);
    auto rs = simulate(Collective::kReduceScatter, s.n, s.count, s.channels, 0, inPlace);
    for (int r = 0; r < s.n; ++r) {
      for (size_t i = 0; i < s.count; ++i) {
        int32_t sum = 0;
        for (int q = 0; q < s.n; ++q) sum += input(q, i);
        ASSERT_EQ(ar[r][i], sum) << "allreduce rank " << r << " i " << i;
        ASSERT_EQ(bc[r][i], input(root, i)) << "broadcast rank " << r << " i " << i;
        if (r == root) {
          ASSERT_EQ(rd[r][i], sum) << "reduce i " << i;
        }
        int32_t rsSum = 0;
        for (int q = 0; q < s.n; ++q) rsSum += input(q, r * s.count + i);
        ASSERT_EQ(rs[r][i], rsSum) << "reducescatter rank " << r << " i " << i;
        for (int q = 0; q < s.n; ++q)
          ASSERT_EQ(ag[r][q * s.count + i], input(q, i)) << "allgather rank " << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, RingPlanSim,
                         ::testing::Values(Shape{1, 5, 1}, Shape{2, 0, 1}, Shape{2, 1, 1},
                                           Shape{3, 7, 2}, Shape{4, 1023, 1}, Shape{5, 1000, 3},
                                           Shape{8, 777, 2}, Shape{3, 20000, 4}));

TEST(RingPlan, StepsPairUp) {
  // What rank r sends to r+1 on a channel, rank r+1 receives, chunk for chunk.
  for (Collective coll : {Collective::kAllReduce, Collective::kAllGather, Collective::kBroadcast,
                          Collective::kReduce, Collective::kReduceScatter}) {
    for (int n : {2, 3, 5, 8}) {
      std::vector<Plan> plans(n);
      for (int r = 0; r < n; ++r) buildRingPlan({coll, n, r, 1, 1000, 2, -1, 4}, &plans[r]);
      for (int c = 0; c < 2; ++c)
        for (int r = 0; r < n; ++r) {
          std::vector<size_t> sent, received;
          for (const Step& s : plans[r].channels[c].steps)
            if (s.sendPeer >= 0) sent.push_back(s.count);
          for (const Step& s : plans[(r + 1) % n].channels[c].steps)
            if (s.recvPeer >= 0) received.push_back(s.count);
          EXPECT_EQ(sent, received) << collectiveName(coll) << " n " << n << " rank " << r;
        }
    }
  }
}

TEST(RingPlan, AllReduceHasTwoNMinusOneSteps) {
  Plan p;
  buildRingPlan({Collective::kAllReduce, 5, 2, 0, 5000, 1, -1, 4}, &p);
  ASSERT_EQ(p.channels.size(), 1u);
  EXPECT_EQ(p.channels[0].steps.size(), 9u);
  int finals = 0;
  for (const Step& s : p.channels[0].steps) finals += s.final;
  EXPECT_EQ(finals, 1);
  EXPECT_NE(p.toString().find("recvReduceCopySend"), std::string::npos);
}

TEST(RingPlan, BlocksAreCacheLineAligned) {
  for (int j = 1; j < 7; ++j) EXPECT_EQ(blockStart(100003, 7, j, 4) % 16, 0u);
  EXPECT_EQ(blockStart(100003, 7, 7, 4), 100003u);
  EXPECT_EQ(blockStart(5, 4, 2, 4), 0u);  // tiny counts land in the last block
}

TEST(RingPlan, AvgDividesOnceAtTheEnd) {
  auto out = simulate(Collective::kAllReduce, 3, 50, 1, 0, false, RedOp::kAvg);
  for (int r = 0; r < 3; ++r)
    for (size_t i = 0; i < 50; ++i)
      ASSERT_EQ(out[r][i], (input(0, i) + input(1, i) + input(2, i)) / 3);
}

}  // namespace
}  // namespace tutti
