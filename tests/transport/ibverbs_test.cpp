// The verbs transport's logic that needs no device: port selection by
// TUTTI_IB_HCA, GID choice from sysfs, the handshake's encoding, the
// registration cache, the flow-control accounting and the GPUDirect RDMA
// choice (TUTTI_NET_GDR_LEVEL). With no RDMA device
// the transport must say why it cannot run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "transport/ibverbs/endpoint_info.h"
#include "transport/ibverbs/flow_control.h"
#include "transport/ibverbs/gdr.h"
#include "transport/ibverbs/gid.h"
#include "transport/ibverbs/hca_filter.h"
#include "transport/ibverbs/mr_cache.h"
#include "transport/ibverbs/transport.h"

namespace tutti {
namespace {

std::vector<IbPortDesc> fabric() {
  return {{"mlx5_0", 1, true, false, 200}, {"mlx5_0", 2, true, false, 200},
          {"mlx5_1", 1, true, true, 100},  {"mlx5_10", 1, true, false, 400},
          {"mlx5_2", 1, false, false, 200}};
}

std::vector<std::string> names(const Result<std::vector<IbPortDesc>>& r) {
  std::vector<std::string> out;
  if (!r.ok()) return {"error: " + r.status().message()};
  for (const auto& p : r.value()) out.push_back(p.device + ":" + std::to_string(p.port));
  return out;
}

TEST(IbHca, NcclGrammarWithPorts) {
  using V = std::vector<std::string>;
  EXPECT_EQ(names(selectIbPorts(fabric(), "")), (V{"mlx5_0:1", "mlx5_0:2", "mlx5_1:1", "mlx5_10:1"}));
  EXPECT_EQ(names(selectIbPorts(fabric(), "mlx5_0:2")), (V{"mlx5_0:2"}));
  EXPECT_EQ(names(selectIbPorts(fabric(), "mlx5_1")), (V{"mlx5_1:1", "mlx5_10:1"}));  // prefix
  EXPECT_EQ(names(selectIbPorts(fabric(), "=mlx5_1")), (V{"mlx5_1:1"}));
  EXPECT_EQ(names(selectIbPorts(fabric(), "^mlx5_0")), (V{"mlx5_1:1", "mlx5_10:1"}));
  EXPECT_EQ(names(selectIbPorts(fabric(), "^=mlx5_1,mlx5_0:1")), (V{"mlx5_0:2", "mlx5_10:1"}));
  EXPECT_EQ(names(selectIbPorts(fabric(), "mlx5_0:1,mlx5_1:1")), (V{"mlx5_0:1", "mlx5_1:1", "mlx5_10:1"}));
  EXPECT_EQ(names(selectIbPorts(fabric(), "=mlx5_0:1,mlx5_1:1")), (V{"mlx5_0:1", "mlx5_1:1"}));
}

TEST(IbHca, NothingUsableSaysWhatExists) {
  auto down = selectIbPorts(fabric(), "mlx5_2");  // exists, but its port is down
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.status().message().find("TUTTI_IB_HCA=mlx5_2"), std::string::npos);
  EXPECT_NE(down.status().message().find("mlx5_2:1 (InfiniBand, 200 Gbit/s, down)"), std::string::npos)
      << down.status().message();
  auto none = selectIbPorts({}, "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no RDMA device"), std::string::npos);
}

// A fake /sys/class/infiniband/<dev>/ports/<port>.
class FakePort {
 public:
  FakePort() {
    dir_ = std::filesystem::temp_directory_path() / ("tutti-gid-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_ / "gids");
    std::filesystem::create_directories(dir_ / "gid_attrs/types");
  }
  ~FakePort() { std::filesystem::remove_all(dir_); }
  void gid(int i, const std::string& value, const std::string& type) {
    std::ofstream(dir_ / "gids" / std::to_string(i)) << value << "\n";
    std::ofstream(dir_ / "gid_attrs/types" / std::to_string(i)) << type << "\n";
  }
  std::string path() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

const char* kLinkLocal = "fe80:0000:0000:0000:0a0b:0cff:fe0d:0e0f";
const char* kIpv4 = "0000:0000:0000:0000:0000:ffff:0a00:0001";
const char* kUnset = "0000:0000:0000:0000:0000:0000:0000:0000";

TEST(IbGid, PrefersRoceV2WithAnIpv4Address) {
  FakePort port;
  port.gid(0, kLinkLocal, "IB/RoCE v1");
  port.gid(1, kLinkLocal, "RoCE v2");
  port.gid(2, kIpv4, "IB/RoCE v1");
  port.gid(3, kIpv4, "RoCE v2");
  port.gid(4, kUnset, "RoCE v2");
  EXPECT_EQ(chooseGidIndex(port.path(), -1).value(), 3);
  EXPECT_EQ(chooseGidIndex(port.path(), 2).value(), 2);  // TUTTI_IB_GID_INDEX wins
  auto unset = chooseGidIndex(port.path(), 4);
  ASSERT_FALSE(unset.ok());
  EXPECT_NE(unset.status().message().find("TUTTI_IB_GID_INDEX=4"), std::string::npos);
}

TEST(IbGid, FallsBackToFirstV2ThenZero) {
  FakePort v2only;
  v2only.gid(0, kLinkLocal, "IB/RoCE v1");
  v2only.gid(1, kLinkLocal, "RoCE v2");
  EXPECT_EQ(chooseGidIndex(v2only.path(), -1).value(), 1);
}

TEST(IbGid, NoV2MeansIndexZero) {
  FakePort v1;
  v1.gid(0, kLinkLocal, "IB/RoCE v1");
  EXPECT_EQ(chooseGidIndex(v1.path(), -1).value(), 0);
}

IbHandle sampleHandle() {
  IbHandle h;
  h.connectionId = (3u << 20) | 7;
  h.magic = 0x1234567890abcdefull;
  h.listener.family = 2;
  h.listener.port = 41000;
  h.info.nqps = 4;
  h.info.mtu = IBV_MTU_4096;
  h.info.lid = 17;
  for (int q = 0; q < 4; ++q) h.info.qpn[q] = 0x100 + q;
  h.info.psn = 0xabcdef;
  h.info.gid[15] = 9;
  h.info.address = 0x7f0000001000ull;
  h.info.rkey = 0x5555;
  h.info.slotBytes = 128 << 10;
  h.info.nslots = 8;
  return h;
}

TEST(IbHandle, RoundTripsThroughTheConnectionHandle) {
  ConnectionHandle wire;
  encodeIbHandle(sampleHandle(), &wire);
  auto back = decodeIbHandle(wire);
  ASSERT_TRUE(back.ok()) << back.status().message();
  IbHandle want = sampleHandle();
  EXPECT_EQ(std::memcmp(&back.value(), &want, sizeof(IbHandle)), 0);
}

TEST(IbHandle, RejectsWhatAPeerCouldGetWrong) {
  auto expectRejected = [](IbHandle h, const char* why) {
    ConnectionHandle wire;
    encodeIbHandle(h, &wire);
    auto r = decodeIbHandle(wire);
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  IbHandle h = sampleHandle();
  h.info.version = 9;
  expectRejected(h, "version 9");
  h = sampleHandle();
  h.info.nqps = 0;
  expectRejected(h, "0 queue pairs");
  h = sampleHandle();
  h.info.nqps = kMaxIbQps + 1;
  expectRejected(h, "9 queue pairs");
  h = sampleHandle();
  h.info.qpn[2] = 0;
  expectRejected(h, "queue pair number 0");
  h = sampleHandle();
  h.info.rkey = 0;
  expectRejected(h, "no remote memory");
  h = sampleHandle();
  h.info.mtu = 0;
  expectRejected(h, "MTU");
  ConnectionHandle socketHandle;  // another transport's handle
  std::memcpy(socketHandle.bytes, "ucx", 4);
  auto r = decodeIbHandle(socketHandle);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TUTTI_NET"), std::string::npos);
}

// A registrar that records what is registered, as a device would.
struct FakeRegistrar {
  std::map<void*, std::pair<uintptr_t, size_t>> live;
  uint32_t next = 1;
  bool fail = false;
  MrCache make(size_t capacity) {
    return MrCache(
        [this](void* start, size_t bytes) -> Result<MemoryKey> {
          if (fail) return SystemError("cannot pin");
          void* handle = reinterpret_cast<void*>(static_cast<uintptr_t>(next));
          live[handle] = {reinterpret_cast<uintptr_t>(start), bytes};
          return MemoryKey{next, next + 1000, reinterpret_cast<void*>(static_cast<uintptr_t>(next++))};
        },
        [this](const MemoryKey& k) { live.erase(k.handle); }, capacity);
  }
};

TEST(IbRegistrationCache, RegistersOncePageAlignedAndReuses) {
  FakeRegistrar reg;
  MrCache cache = reg.make(4);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  std::vector<char> buf(10 * page);
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(buf.data()) + page - 1) / page * page);
  auto a = cache.acquire(base + 100, 3 * page);  // spans 4 pages
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(reg.live.size(), 1u);
  auto region = reg.live.begin()->second;
  EXPECT_EQ(region.first, reinterpret_cast<uintptr_t>(base));
  EXPECT_EQ(region.second, 4 * page);
  auto inside = cache.acquire(base + page, page);  // inside the same region
  ASSERT_TRUE(inside.ok());
  EXPECT_EQ(inside->lkey, a->lkey);
  EXPECT_EQ(cache.registrations(), 1u);
  auto beyond = cache.acquire(base + 5 * page, 10);  // not covered
  ASSERT_TRUE(beyond.ok());
  EXPECT_NE(beyond->lkey, a->lkey);
  EXPECT_EQ(cache.registrations(), 2u);
}

TEST(IbRegistrationCache, EvictsOnlyUnusedRegionsOldestFirst) {
  FakeRegistrar reg;
  MrCache cache = reg.make(2);
  static char arena[8][1 << 16];
  std::vector<MemoryKey> keys;
  for (int i = 0; i < 3; ++i) keys.push_back(cache.acquire(arena[2 * i], 100).value());
  EXPECT_EQ(reg.live.size(), 3u);  // all in use: nothing may go
  cache.release(keys[0]);
  EXPECT_EQ(reg.live.size(), 2u);  // over capacity and unused: dropped
  EXPECT_EQ(reg.live.count(keys[0].handle), 0u);
  cache.release(keys[1]);
  cache.release(keys[2]);
  EXPECT_EQ(reg.live.size(), 2u);
  cache.acquire(arena[7], 100).value();  // a fourth: the oldest unused goes
  EXPECT_EQ(reg.live.count(keys[1].handle), 0u);
  EXPECT_EQ(reg.live.count(keys[2].handle), 1u);
}

TEST(IbRegistrationCache, InvalidateAndErrors) {
  FakeRegistrar reg;
  MrCache cache = reg.make(8);
  static char arena[1 << 16];
  MemoryKey k = cache.acquire(arena, 100).value();
  cache.invalidate(arena, 10);  // in use: must stay
  EXPECT_EQ(reg.live.size(), 1u);
  cache.release(k);
  cache.invalidate(arena, 10);
  EXPECT_EQ(reg.live.size(), 0u);
  reg.fail = true;
  auto r = cache.acquire(arena, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot pin"), std::string::npos);
}

TEST(IbFlowControl, CreditsBoundTheChunksInFlight) {
  CreditWindow w(8);
  EXPECT_TRUE(w.canPost(0, 0));
  EXPECT_TRUE(w.canPost(7, 0));
  EXPECT_FALSE(w.canPost(8, 0));
  EXPECT_TRUE(w.canPost(8, 1));
  EXPECT_FALSE(w.canPost(1008, 1000));
  // Credits go back once a quarter of the ring is free, not per chunk.
  EXPECT_FALSE(w.shouldReturn(1, 0));
  EXPECT_TRUE(w.shouldReturn(2, 0));
  EXPECT_FALSE(w.shouldReturn(11, 10));
  CreditWindow tiny(2);  // at least every slot
  EXPECT_TRUE(tiny.shouldReturn(1, 0));
}

TEST(IbFlowControl, StripesCoverEachChunkOnceInOrder) {
  for (int nqps = 1; nqps <= kMaxIbQps; ++nqps)
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{12289}, size_t{1} << 20}) {
      EXPECT_EQ(stripeStart(bytes, nqps, 0), 0u);
      EXPECT_EQ(stripeStart(bytes, nqps, nqps), bytes);
      for (int q = 0; q < nqps; ++q) EXPECT_LE(stripeStart(bytes, nqps, q), stripeStart(bytes, nqps, q + 1));
    }
  EXPECT_EQ(stripeStart(1 << 20, 4, 1), size_t{1} << 18);
}

TEST(IbFlowControl, AChunkIsWholeWhenEveryQueuePairDelivered) {
  StripeTracker t(3);
  t.arrived(0);
  t.arrived(0);
  t.arrived(2);
  EXPECT_EQ(t.complete(), 0u);
  t.arrived(1);
  EXPECT_EQ(t.complete(), 1u);
  t.arrived(1);
  t.arrived(2);
  EXPECT_EQ(t.complete(), 2u);
  EXPECT_TRUE(isNoticeImm(kNoticeImm | 5));
  EXPECT_FALSE(isNoticeImm(1u << 30));
}

TEST(IbTransport, SaysWhyItCannotRunWithoutADevice) {
  std::string detail;
  Status st = IbTransport::probe(&detail);
  if (st.ok()) GTEST_SKIP() << "an RDMA port is usable here: " << detail;
  EXPECT_FALSE(st.message().empty());
  EXPECT_TRUE(st.message().find("RDMA") != std::string::npos ||
              st.message().find("libibverbs") != std::string::npos)
      << st.message();
}

// NCCL's names and numbers, case-insensitive; anything else names the variable.
TEST(IbGdr, LevelsParseAsNcclWritesThem) {
  EXPECT_EQ(*parseGdrLevel("PXB"), PciPath::kPxb);
  EXPECT_EQ(*parseGdrLevel("phb"), PciPath::kPhb);
  EXPECT_EQ(*parseGdrLevel("0"), PciPath::kLoc);
  EXPECT_EQ(*parseGdrLevel("1"), PciPath::kPix);
  EXPECT_EQ(*parseGdrLevel("4"), PciPath::kSys);
  for (const char* bad : {"", "5", "-1", "NVL", "PXB2"}) {
    auto r = parseGdrLevel(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("TUTTI_NET_GDR_LEVEL"), std::string::npos);
  }
}

// Used only with a CUDA device, the peer-memory module, a known distance
// within the level; each refusal says which of these is missing.
TEST(IbGdr, UsedOnlyWhenEveryConditionHoldsAndOtherwiseSaysWhy) {
  GdrFacts f;
  f.level = PciPath::kPxb;
  f.realDevice = true;
  f.peerMemory = true;
  f.path = PciPath::kPix;
  f.nic = "mlx5_0";
  GdrChoice c = chooseGdr(f);
  EXPECT_TRUE(c.use);
  EXPECT_EQ(c.why, "mlx5_0 is PIX from the GPU, within TUTTI_NET_GDR_LEVEL=PXB");
  f.path = PciPath::kPxb;
  EXPECT_TRUE(chooseGdr(f).use);  // the level itself is within

  auto refused = [](GdrFacts g, const std::string& why) {
    GdrChoice r = chooseGdr(g);
    EXPECT_FALSE(r.use) << why;
    EXPECT_NE(r.why.find(why), std::string::npos) << r.why;
  };
  GdrFacts far = f;
  far.path = PciPath::kPhb;
  refused(far, "mlx5_0 is PHB from the GPU, beyond TUTTI_NET_GDR_LEVEL=PXB");
  far.level = PciPath::kSys;
  EXPECT_TRUE(chooseGdr(far).use);
  GdrFacts off = f;
  off.level = PciPath::kLoc;
  refused(off, "TUTTI_NET_GDR_LEVEL=LOC turns it off");
  GdrFacts noModule = f;
  noModule.peerMemory = false;
  refused(noModule, "no nvidia_peermem module");
  GdrFacts emulated = f;
  emulated.realDevice = false;
  refused(emulated, "no CUDA device");
  GdrFacts unknown = f;
  unknown.path.reset();
  refused(unknown, "mlx5_0's distance from the GPU is unknown");
}

// Without a CUDA device or an RDMA port here, tutti-info's lines say why
// device calls would not use it.
TEST(IbGdr, DescribedWithTheReasonWhenNotUsed) {
  std::vector<std::string> lines = IbTransport::describeGdr({-1, nullptr});
  ASSERT_FALSE(lines.empty());
  for (const auto& l : lines) EXPECT_NE(l.find("not used"), std::string::npos) << l;
}

}  // namespace
}  // namespace tutti
