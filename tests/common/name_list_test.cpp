// NCCL's interface grammar and the interface choice built on it.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "src/common/interfaces.h"
#include "src/common/name_list.h"

namespace tutti {
namespace {

TEST(NameList, PrefixMatchByDefault) {
  NameList l("eth,ib");
  EXPECT_TRUE(l.matches("eth0"));
  EXPECT_TRUE(l.matches("ib1"));
  EXPECT_FALSE(l.matches("enp3s0"));
  EXPECT_FALSE(l.matches("et"));
}

TEST(NameList, ExactWithEquals) {
  NameList l("=eth0,eth2");
  EXPECT_TRUE(l.matches("eth0"));
  EXPECT_TRUE(l.matches("eth2"));
  EXPECT_FALSE(l.matches("eth01"));
  EXPECT_FALSE(l.matches("eth1"));
}

TEST(NameList, ExcludeWithCaret) {
  NameList l("^docker,lo");
  EXPECT_FALSE(l.matches("docker0"));
  EXPECT_FALSE(l.matches("lo"));
  EXPECT_TRUE(l.matches("eth0"));
}

TEST(NameList, ExcludeExact) {
  NameList l("^=eth0");
  EXPECT_FALSE(l.matches("eth0"));
  EXPECT_TRUE(l.matches("eth01"));
}

TEST(NameList, PortsForHcas) {
  NameList l("mlx5_0:1,mlx5_1");
  EXPECT_TRUE(l.matches("mlx5_0", 1));
  EXPECT_FALSE(l.matches("mlx5_0", 2));
  EXPECT_TRUE(l.matches("mlx5_1", 2));
}

TEST(NameList, EmptyMatchesAll) {
  EXPECT_TRUE(NameList("").matches("anything"));
  EXPECT_EQ(NameList("^=a,b:2").toString(), "^=a,b:2");
}

NetInterface fake(const char* name, int family = AF_INET) {
  NetInterface i;
  i.name = name;
  i.address.storage.ss_family = static_cast<sa_family_t>(family);
  i.address.length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  return i;
}

TEST(SelectInterfaces, DefaultSkipsLoopbackAndBridges) {
  std::vector<NetInterface> all = {fake("lo"), fake("docker0"), fake("eth0"), fake("virbr0")};
  auto chosen = selectInterfaces(all, "", 0);
  ASSERT_TRUE(chosen.ok());
  ASSERT_EQ(chosen->size(), 1u);
  EXPECT_EQ(chosen->front().name, "eth0");
}

TEST(SelectInterfaces, FallsBackToLoopbackWhenAlone) {
  auto chosen = selectInterfaces({fake("lo")}, "", 0);
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->front().name, "lo");
}

TEST(SelectInterfaces, FamilyFilter) {
  auto chosen = selectInterfaces({fake("eth0", AF_INET6), fake("eth1")}, "eth", AF_INET6);
  ASSERT_TRUE(chosen.ok());
  ASSERT_EQ(chosen->size(), 1u);
  EXPECT_EQ(chosen->front().name, "eth0");
}

TEST(SelectInterfaces, NoMatchListsWhatExists) {
  auto chosen = selectInterfaces({fake("lo"), fake("eth0")}, "ib", 0);
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.status().code(), Code::kInvalidArgument);
  EXPECT_NE(chosen.status().message().find("TUTTI_SOCKET_IFNAME=\"ib\""), std::string::npos);
  EXPECT_NE(chosen.status().message().find("lo"), std::string::npos);
  EXPECT_NE(chosen.status().message().find("eth0"), std::string::npos);
}

}  // namespace
}  // namespace tutti
