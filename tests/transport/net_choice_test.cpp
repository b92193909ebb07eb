// TUTTI_NET: names are NCCL_NET-like and case-insensitive, a named transport
// that cannot run here says why, and the default is the fastest usable.
#include <gtest/gtest.h>

#include "transport/registry.h"

namespace tutti {
namespace {

TEST(NetChoice, NamesAndDefault) {
  EXPECT_EQ(chooseNet("socket").value(), NetKind::kSocket);
  EXPECT_EQ(chooseNet("Socket").value(), NetKind::kSocket);
  auto nets = probeNets();
  ASSERT_EQ(nets.size(), 3u);
  EXPECT_EQ(nets[0].kind, NetKind::kIb);  // fastest first
  for (const auto& n : nets) EXPECT_FALSE(n.detail.empty()) << netName(n.kind);
  // The default: the first usable on an RDMA fabric, else the socket transport.
  NetKind want = NetKind::kSocket;
  for (auto it = nets.rbegin(); it != nets.rend(); ++it)
    if (it->usable && it->rdma) want = it->kind;
  EXPECT_EQ(chooseNet("").value(), want);
  for (const auto& n : nets)
    if (n.kind == NetKind::kSocket) {
      EXPECT_TRUE(n.usable && !n.rdma);
    }
}

TEST(NetChoice, UnknownOrUnusableSaysWhy) {
  auto bogus = chooseNet("infiniband");
  ASSERT_FALSE(bogus.ok());
  EXPECT_NE(bogus.status().message().find("TUTTI_NET=infiniband names no transport"), std::string::npos);
  for (const auto& n : probeNets()) {
    if (n.usable) continue;
    auto r = chooseNet(netName(n.kind));
    ASSERT_FALSE(r.ok()) << netName(n.kind);
    EXPECT_NE(r.status().message().find(n.detail), std::string::npos) << r.status().message();
  }
}

TEST(NetChoice, UcxIsUsableWhenBuilt) {
  for (const auto& n : probeNets())
    if (n.kind == NetKind::kUcx && n.built) {
      EXPECT_TRUE(n.usable) << n.detail;
      EXPECT_NE(n.detail.find("UCX "), std::string::npos) << n.detail;
      EXPECT_EQ(chooseNet("UCX").value(), NetKind::kUcx);
    }
}

}  // namespace
}  // namespace tutti
