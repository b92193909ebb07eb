// A rank's doorbell: a host-mate's ring makes it readable, drain() empties
// it, strangers' datagrams cost a wake-up and nothing else, and a bell
// nobody binds (or one gone) is unreachable rather than an error.
#include "src/common/doorbell.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>

namespace tutti {
namespace {

bool rings(const Doorbell& bell, int timeoutMs) {
  pollfd fd{bell.fd(), POLLIN, 0};
  return ::poll(&fd, 1, timeoutMs) == 1;
}

const uint64_t kMagic = 0xd00bull + static_cast<uint64_t>(getpid());

TEST(Doorbell, RingWakesThePollerAndDrainQuietsIt) {
  auto bell = Doorbell::bind(kMagic, 3);
  ASSERT_TRUE(bell.ok()) << bell.status().message();
  EXPECT_FALSE(rings(**bell, 0));
  DoorbellRinger ringer(kMagic, 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(ringer.ring());
  EXPECT_TRUE(rings(**bell, 1000));
  (*bell)->drain();
  EXPECT_FALSE(rings(**bell, 0));
}

TEST(Doorbell, OneBellPerCommunicatorAndRank) {
  auto first = Doorbell::bind(kMagic, 4);
  ASSERT_TRUE(first.ok());
  auto second = Doorbell::bind(kMagic, 4);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("rank 4"), std::string::npos) << second.status().message();
  EXPECT_TRUE(Doorbell::bind(kMagic + 1, 4).ok());
}

// A stranger who finds the name (it is listed in /proc/net/unix) and floods
// it: the rank wakes, drains a bounded batch, and the bell still works.
TEST(Doorbell, AStrangersDatagramsCostAWakeUpOnly) {
  auto bell = Doorbell::bind(kMagic, 5);
  ASSERT_TRUE(bell.ok());
  const int stranger = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(stranger, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "tutti-bell-%016llx-%d",
                         static_cast<unsigned long long>(kMagic), 5);
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  char junk[4096];
  for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = static_cast<char>(i * 7);
  int sent = 0;
  for (int i = 0; i < 1000; ++i)
    sent += sendto(stranger, junk, sizeof(junk), 0, reinterpret_cast<const sockaddr*>(&addr), len) > 0;
  close(stranger);
  ASSERT_GT(sent, 0);
  EXPECT_TRUE(rings(**bell, 1000));
  for (int i = 0; i < sent && rings(**bell, 0); ++i) (*bell)->drain();
  EXPECT_FALSE(rings(**bell, 0));
  DoorbellRinger ringer(kMagic, 5);
  EXPECT_TRUE(ringer.ring());
  EXPECT_TRUE(rings(**bell, 1000));
}

TEST(Doorbell, ABellNobodyBindsIsUnreachable) {
  DoorbellRinger ringer(kMagic, 6);
  EXPECT_FALSE(ringer.ring());
  EXPECT_FALSE(ringer.ring());
  // One that goes away after the first ring.
  auto bell = Doorbell::bind(kMagic, 7);
  ASSERT_TRUE(bell.ok());
  DoorbellRinger late(kMagic, 7);
  EXPECT_TRUE(late.ring());
  bell->reset();
  EXPECT_FALSE(late.ring());
}

}  // namespace
}  // namespace tutti
