// The bootstrap's all-gather, barrier and broadcast over loopback, ranks as
// threads: every slot checked at rank counts that are and are not powers of
// two, and with slots large enough that every rank's send blocks until it reads.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/bootstrap/root.h"
#include "src/bootstrap/socket_bootstrap.h"

namespace tutti {
namespace {

// What rank r writes into byte i of its slot in all-gather number `round`.
char pattern(int r, size_t i, int round) { return static_cast<char>(r * 131 + i * 7 + round * 17); }

// Runs `body` as each of n ranks (threads) on a bootstrap of their own;
// returns the first failure's description, "" if none.
std::string onEveryRank(int n, const std::function<std::string(int rank, SocketBootstrap&)>& body) {
  auto addr = SocketAddress::parse("127.0.0.1:0");
  if (!addr.ok()) return addr.status().message();
  auto handle = startRoot(*addr, randomMagic(), 30);
  if (!handle.ok()) return handle.status().message();
  NetInterface lo{"lo", *addr};
  std::vector<std::string> failures(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      auto b = SocketBootstrap::create(*handle, r, n, lo, 30, nullptr);
      failures[r] = b.ok() ? body(r, **b) : b.status().message();
    });
  for (auto& t : threads) t.join();
  for (const auto& f : failures)
    if (!f.empty()) return f;
  return "";
}

// Runs `rounds` all-gathers of `slotBytes` with n ranks and checks every byte
// each rank receives.
std::string gatherOnEveryRank(int n, size_t slotBytes, int rounds) {
  return onEveryRank(n, [&](int r, SocketBootstrap& b) -> std::string {
    for (int round = 0; round < rounds; ++round) {
      std::vector<char> all(n * slotBytes, 0);
      for (size_t i = 0; i < slotBytes; ++i) all[r * slotBytes + i] = pattern(r, i, round);
      Status st = b.allgather(all.data(), slotBytes);
      if (st.ok()) st = b.barrier();
      if (!st.ok()) return st.message();
      for (int from = 0; from < n; ++from)
        for (size_t i = 0; i < slotBytes; ++i)
          if (all[from * slotBytes + i] != pattern(from, i, round))
            return "rank " + std::to_string(r) + " round " + std::to_string(round) + ": byte " + std::to_string(i) +
                   " of rank " + std::to_string(from) + "'s slot is wrong";
    }
    return "";
  });
}

TEST(SocketBootstrap, AllgatherFillsEverySlotAtAwkwardRankCounts) {
  for (int n : {1, 2, 3, 5, 6, 7, 8, 11, 16, 17})
    for (size_t bytes : {size_t{1}, size_t{13}, size_t{120}})
      EXPECT_EQ(gatherOnEveryRank(n, bytes, 3), "") << n << " ranks, " << bytes << " bytes a slot";
}

// 12 ranks x 2 MiB: the last round's messages (4 slots, 8 MiB) overfill the
// sockets, so every rank's send stalls until its peer reads while sending too.
TEST(SocketBootstrap, AllgatherOfSlotsLargerThanSocketBuffersDoesNotDeadlock) {
  EXPECT_EQ(gatherOnEveryRank(12, size_t{2} << 20, 1), "");
}

// Rank 0's bytes reach every rank, and an all-gather after it is whole.
TEST(SocketBootstrap, BroadcastFromRankZeroReachesEveryRank) {
  for (int n : {1, 2, 3, 5, 8, 11, 17})
    for (size_t bytes : {size_t{1}, size_t{776}})
      EXPECT_EQ(onEveryRank(n, [&](int r, SocketBootstrap& b) -> std::string {
        std::vector<char> data(bytes, 0);
        if (r == 0)
          for (size_t i = 0; i < bytes; ++i) data[i] = pattern(0, i, 9);
        Status st = broadcastFromRank0(b, -7, data.data(), bytes);
        if (!st.ok()) return st.message();
        for (size_t i = 0; i < bytes; ++i)
          if (data[i] != pattern(0, i, 9)) return "rank " + std::to_string(r) + ": byte " + std::to_string(i) + " is wrong";
        std::vector<char> all(n, 0);
        all[r] = static_cast<char>(r + 1);
        if (!(st = b.allgather(all.data(), 1)).ok()) return st.message();
        for (int from = 0; from < n; ++from)
          if (all[from] != static_cast<char>(from + 1)) return "rank " + std::to_string(r) + ": the all-gather after is wrong";
        return "";
      }), "") << n << " ranks, " << bytes << " bytes";
}

}  // namespace
}  // namespace tutti
