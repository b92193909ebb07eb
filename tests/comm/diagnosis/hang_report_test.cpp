// The words of a timeout: who holds the call up, in what state, and who
// waits. The facts are made up here; the trials (stopped_rank_trials_test)
// gather real ones.
#include "src/comm/diagnosis/hang_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "kernels/dtype.h"
#include "src/comm/diagnosis/progress_board.h"
#include "src/plan/plan.h"

namespace tutti {
namespace {

CallRecord call(Collective c, uint64_t entered, uint64_t finished, size_t count = 1024,
                DataType dt = DataType::kFloat32, RedOp op = RedOp::kSum, int root = 0) {
  CallRecord r;
  r.entered = {entered, count, static_cast<int32_t>(c), static_cast<int32_t>(dt), static_cast<int32_t>(op), root};
  r.finished = finished;
  if (entered) r.recent[entered % CallRecord::kRecent] = r.entered;
  return r;
}

HangPeer peer(int rank, CallRecord rec, ProcessState state = ProcessState::kRunning, bool answered = true) {
  HangPeer p;
  p.host = rank < 3 ? "a" : "b";
  p.pid = 1000 + rank;
  p.progress.rank = rank;
  p.progress.answered = answered;
  p.progress.state = static_cast<int>(state);
  p.progress.hasRecord = answered;
  p.progress.record = rec;
  return p;
}

std::vector<HangPeer> allInside(int n, uint64_t seq) {
  std::vector<HangPeer> peers;
  for (int r = 0; r < n; ++r) peers.push_back(peer(r, call(Collective::kAllReduce, seq, seq - 1)));
  return peers;
}

TEST(HangReport, NamesTheRankThatHasNotEnteredTheCall) {
  auto peers = allInside(6, 4711);
  peers[5] = peer(5, call(Collective::kBroadcast, 4710, 4710));
  HangReport r = explainHang(0, peers[0].progress.record, "timed out on rank 0 after 30 s", peers);
  EXPECT_EQ(r.culprit, 5);
  EXPECT_EQ(r.text, "tuttiAllReduce #4711 timed out on rank 0 after 30 s: rank 5 (host b, pid 1005, alive) "
                    "has not entered call #4711 (its last was tuttiBroadcast #4710); ranks 0-4 wait for it");
}

TEST(HangReport, AStoppedRankComesFirstEvenInsideTheCall) {
  auto peers = allInside(4, 12);
  peers[2] = peer(2, call(Collective::kAllReduce, 12, 11), ProcessState::kStopped);
  peers[3] = peer(3, call(Collective::kAllReduce, 12, 11), ProcessState::kGone);
  HangReport r = explainHang(1, peers[1].progress.record, "timed out on rank 1 after 5 s", peers);
  EXPECT_EQ(r.culprit, 2);
  EXPECT_EQ(r.text, "tuttiAllReduce #12 timed out on rank 1 after 5 s: rank 2 (host a, pid 1002, stopped) is "
                    "inside call #12; ranks 0-1 wait for it; rank 3 left or did not answer");
}

TEST(HangReport, NamesBothSidesOfAMismatchedCall) {
  auto peers = allInside(4, 12);
  peers[3] = peer(3, call(Collective::kBroadcast, 12, 11, 1024, DataType::kFloat32, RedOp::kSum, 2));
  HangReport r = explainHang(0, peers[0].progress.record, "timed out on rank 0 after 5 s", peers);
  EXPECT_EQ(r.culprit, 3);
  EXPECT_EQ(r.text, "tuttiAllReduce #12 timed out on rank 0 after 5 s: rank 3 (host b, pid 1003, alive) called "
                    "tuttiBroadcast(count 1024 float, root 2) as call #12 while rank 0 called "
                    "tuttiAllReduce(count 1024 float, sum); ranks 0-2 wait for it");
}

TEST(HangReport, AHostThatDoesNotAnswerIsBlamedOnlyWhenNothingElseIs) {
  auto peers = allInside(5, 3);
  peers[4] = peer(4, {}, ProcessState::kRunning, false);
  HangReport r = explainHang(0, peers[0].progress.record, "timed out on rank 0 after 1 s", peers);
  EXPECT_EQ(r.culprit, 4);
  EXPECT_EQ(r.text, "tuttiAllReduce #3 timed out on rank 0 after 1 s: rank 4 (host b, pid 1004, not answering); "
                    "ranks 0-3 wait for it");
  peers[1] = peer(1, call(Collective::kAllReduce, 2, 2));
  r = explainHang(0, peers[0].progress.record, "timed out on rank 0 after 1 s", peers);
  EXPECT_EQ(r.culprit, 1);
}

TEST(HangReport, WithoutACertainCauseTheRankAPeerBlamedComesFirst) {
  auto peers = allInside(4, 12);
  peers[1] = peer(1, {}, ProcessState::kGone);
  peers[1].progress.hasRecord = 0;  // its segment left with it
  peers[3] = peer(3, {}, ProcessState::kRunning, false);
  HangReport r = explainHang(0, peers[0].progress.record, "timed out on rank 0 after 5 s", peers, 3);
  EXPECT_EQ(r.culprit, 3);
  EXPECT_EQ(r.text, "tuttiAllReduce #12 timed out on rank 0 after 5 s: rank 3 (host b, pid 1003, not answering) is "
                    "blamed by the ranks that gave up before this one; rank 1 (host a, pid 1001, gone); ranks 0, 2 "
                    "wait for them");
}

TEST(HangReport, RanksThatFinishedAreNotBlamed) {
  auto peers = allInside(3, 8);
  peers[2] = peer(2, call(Collective::kAllReduce, 9, 8));
  HangReport r = explainHang(0, peers[0].progress.record, "timed out on rank 0 after 1 s", peers);
  EXPECT_EQ(r.culprit, -1);
  EXPECT_EQ(r.text, "tuttiAllReduce #8 timed out on rank 0 after 1 s: every rank is inside call #8");
}

// The side channel: a record published in shared memory, read back by
// (pid, communicator, rank) here and through the service over TCP, which
// also survives a stranger's bytes.
TEST(ProgressService, AnswersForTheRanksOfItsHost) {
  ProgressBoard board;
  const uint64_t magic = 0x1234abcd5678ull ^ static_cast<uint64_t>(getpid());
  ASSERT_TRUE(board.publish(magic, 3).ok());
  board.mine().enter({42, 77, static_cast<int32_t>(Collective::kReduce), 1, 2, 5});
  board.mine().waitOn(4, true, 2);
  CallRecord read;
  ASSERT_TRUE(ProgressBoard::readPeer(getpid(), magic, 3, &read));
  EXPECT_EQ(read.entered.sequence, 42u);
  EXPECT_EQ(read.entered.count, 77u);
  EXPECT_EQ(read.entered.root, 5);
  EXPECT_EQ(read.waitPeer, 4);
  EXPECT_FALSE(ProgressBoard::readPeer(getpid(), magic, 2, &read));

  auto loopback = SocketAddress::parse("127.0.0.1:0");
  ASSERT_TRUE(loopback.ok());
  auto port = ProgressService::listenOn(*loopback);
  ASSERT_TRUE(port.ok()) << port.status().message();
  SocketAddress at = *loopback;
  at.setPort(*port);
  {  // a stranger: garbage, then a close
    auto s = Socket::connect(at, Deadline::after(2));
    ASSERT_TRUE(s.ok());
    std::string junk(700, 'x');
    (void)s->sendAll(junk.data(), junk.size(), Deadline::after(1));
  }
  auto got = ProgressService::ask(at, magic, {{3, getpid()}, {2, getpid()}, {9, 999999999}}, Deadline::after(3));
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_TRUE((*got)[0].hasRecord);
  EXPECT_EQ((*got)[0].record.entered.sequence, 42u);
  EXPECT_EQ((*got)[0].state, static_cast<int>(ProcessState::kRunning));
  EXPECT_FALSE((*got)[1].hasRecord);
  EXPECT_EQ((*got)[2].state, static_cast<int>(ProcessState::kGone));
}

}  // namespace
}  // namespace tutti
