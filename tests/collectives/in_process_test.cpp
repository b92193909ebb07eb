// Several ranks in one process (tuttiCommInitAll), driven from one thread
// with group calls over all their communicators, as single-process
// multi-device NCCL programs do; and ranks as threads, each with its own comm.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "tutti/tutti.h"

namespace tutti_test {
namespace {

class InProcess : public ::testing::Test {
 protected:
  void SetUp() override { setenv("TUTTI_SOCKET_IFNAME", "lo", 1); }
};

TEST_F(InProcess, GroupOverAllCommsFromOneThread) {
  const int n = 3;
  tuttiComm_t comms[n];
  ASSERT_EQ(tuttiCommInitAll(comms, n, nullptr), tuttiSuccess) << tuttiGetLastError(nullptr);
  const size_t count = 100003;
  std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(count)), out = in, p2p = in;
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<int64_t>(r * 1000 + i);
  // Without a group this would deadlock: rank 0's call waits for the others.
  ASSERT_EQ(tuttiGroupStart(), tuttiSuccess);
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(tuttiAllReduce(in[r].data(), out[r].data(), count, tuttiInt64, tuttiSum, comms[r], nullptr),
              tuttiSuccess);
  ASSERT_EQ(tuttiGroupEnd(), tuttiSuccess) << tuttiGetLastError(nullptr);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(out[r][i], static_cast<int64_t>(3000 + 3 * i)) << "rank " << r << " element " << i;
  // Send/recv around the ring, first use of those connections inside the group.
  ASSERT_EQ(tuttiGroupStart(), tuttiSuccess);
  for (int r = 0; r < n; ++r) {
    tuttiSend(in[r].data(), count, tuttiInt64, (r + 1) % n, comms[r], nullptr);
    tuttiRecv(p2p[r].data(), count, tuttiInt64, (r + n - 1) % n, comms[r], nullptr);
  }
  ASSERT_EQ(tuttiGroupEnd(), tuttiSuccess) << tuttiGetLastError(nullptr);
  for (int r = 0; r < n; ++r) ASSERT_EQ(p2p[r], in[(r + n - 1) % n]) << "rank " << r;
  for (int r = 0; r < n; ++r) EXPECT_EQ(tuttiCommDestroy(comms[r]), tuttiSuccess);
}

// Calls small enough for the host block, grouped: a group runs its calls
// through the executor together, so each must have its steps (the block
// serves only calls made one at a time).
TEST_F(InProcess, GroupOfSmallCallsOnOneHost) {
  const int n = 3;
  tuttiComm_t comms[n];
  ASSERT_EQ(tuttiCommInitAll(comms, n, nullptr), tuttiSuccess) << tuttiGetLastError(nullptr);
  for (size_t count : {size_t{1}, size_t{5}, size_t{200}}) {
    std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(count)), sum = in, bcast = in;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<int64_t>(r * 1000 + i + 1);
    ASSERT_EQ(tuttiGroupStart(), tuttiSuccess);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(tuttiAllReduce(in[r].data(), sum[r].data(), count, tuttiInt64, tuttiSum, comms[r], nullptr),
                tuttiSuccess);
      ASSERT_EQ(tuttiBroadcast(in[r].data(), bcast[r].data(), count, tuttiInt64, 2, comms[r], nullptr),
                tuttiSuccess);
    }
    ASSERT_EQ(tuttiGroupEnd(), tuttiSuccess) << tuttiGetLastError(nullptr);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(sum[r][i], static_cast<int64_t>(3000 + 3 * (i + 1))) << "rank " << r << " element " << i;
        ASSERT_EQ(bcast[r][i], in[2][i]) << "rank " << r << " element " << i;
      }
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(tuttiCommDestroy(comms[r]), tuttiSuccess);
}

TEST_F(InProcess, RanksAsThreads) {
  const int n = 4;
  tuttiUniqueId id;
  ASSERT_EQ(tuttiGetUniqueId(&id), tuttiSuccess);
  std::vector<int> ok(n, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      tuttiComm_t comm = nullptr;
      if (tuttiCommInitRank(&comm, n, id, r) != tuttiSuccess) return;
      std::vector<float> buf(4097, static_cast<float>(r + 1));
      if (tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiAvg, comm, nullptr) ==
              tuttiSuccess &&
          buf[0] == 2.5f && buf[4096] == 2.5f)
        ok[r] = 1;
      // Plain (ungrouped) send/recv, twice over the same connection: even ranks
      // send to the next odd rank.
      std::vector<int32_t> msg(70001);
      for (int round = 0; round < 2 && ok[r]; ++round) {
        tuttiResult_t res;
        if (r % 2 == 0) {
          for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<int32_t>(r * 7 + i + round);
          res = tuttiSend(msg.data(), msg.size(), tuttiInt32, r + 1, comm, nullptr);
        } else {
          res = tuttiRecv(msg.data(), msg.size(), tuttiInt32, r - 1, comm, nullptr);
          for (size_t i = 0; i < msg.size() && res == tuttiSuccess; ++i)
            if (msg[i] != static_cast<int32_t>((r - 1) * 7 + i + round)) res = tuttiInternalError;
        }
        if (res != tuttiSuccess) ok[r] = 0;
      }
      tuttiCommDestroy(comm);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(ok[r], 1) << "rank " << r;
}

}  // namespace
}  // namespace tutti_test
