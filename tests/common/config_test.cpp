// Tunables: TUTTI_ first, NCCL_ as the fallback, the table's default last.
#include <gtest/gtest.h>

#include <cstdlib>

#include "src/comm/comm_config.h"
#include "src/common/config.h"

namespace tutti {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* v : {"TUTTI_TIMEOUT", "NCCL_TIMEOUT", "TUTTI_NSTEPS", "TUTTI_BUFFSIZE",
                          "TUTTI_NCHANNELS", "TUTTI_DEVICE_WORKER"})
      unsetenv(v);
  }
};

TEST_F(ConfigTest, DefaultThenNcclThenTutti) {
  std::string source;
  EXPECT_EQ(tunableString("TIMEOUT", &source), "300");
  EXPECT_EQ(source, "default");
  setenv("NCCL_TIMEOUT", "7", 1);
  EXPECT_EQ(tunableString("TIMEOUT", &source), "7");
  EXPECT_EQ(source, "NCCL_TIMEOUT");
  setenv("TUTTI_TIMEOUT", "9", 1);
  EXPECT_EQ(*tunableInt("TIMEOUT"), 9);
}

TEST_F(ConfigTest, MalformedIntegerNamesTheVariable) {
  setenv("TUTTI_TIMEOUT", "12abc", 1);
  auto v = tunableInt("TIMEOUT");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("TUTTI_TIMEOUT=\"12abc\""), std::string::npos);
}

TEST_F(ConfigTest, ParseInt) {
  int64_t v = 0;
  EXPECT_TRUE(parseInt64("0x10", &v));
  EXPECT_EQ(v, 16);
  EXPECT_TRUE(parseInt64("-5", &v));
  EXPECT_EQ(v, -5);
  EXPECT_FALSE(parseInt64("", &v));
  EXPECT_FALSE(parseInt64("1.5", &v));
}

TEST_F(ConfigTest, CommConfigChecksRanges) {
  auto ok = CommConfig::fromEnv();
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->slotBytes, 1048576u / 8);
  setenv("TUTTI_NSTEPS", "40", 1);
  EXPECT_FALSE(CommConfig::fromEnv().ok());
  setenv("TUTTI_NSTEPS", "4", 1);
  setenv("TUTTI_BUFFSIZE", "1048576", 1);
  setenv("TUTTI_NCHANNELS", "3", 1);
  auto c = CommConfig::fromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->slotBytes, 262144u);
  EXPECT_EQ(c->maxChannels, 3);
  EXPECT_TRUE(c->channelsForced);
}

// The device calls' worker kernel: the grid's unless told lean; anything
// else is refused by name.
TEST_F(ConfigTest, DeviceWorkerIsGridLeanOrRefused) {
  EXPECT_FALSE(CommConfig::fromEnv()->leanWorker);
  setenv("TUTTI_DEVICE_WORKER", "lean", 1);
  EXPECT_TRUE(CommConfig::fromEnv()->leanWorker);
  setenv("TUTTI_DEVICE_WORKER", "fast", 1);
  auto bad = CommConfig::fromEnv();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("TUTTI_DEVICE_WORKER must be grid or lean, not \"fast\""), std::string::npos)
      << bad.status().message();
}

// Ranks outnumbering cores yield a while before they sleep, unless their
// calls run beside the caller's compute (tuttiConfig_t::callsBesideCompute):
// then every wait sleeps at once, on shared memory and on sockets. A rank
// alone on its cores keeps polling either way.
TEST_F(ConfigTest, CallsBesideComputeSleepAtOnceWhereRanksOutnumberCores) {
  for (int nodes : {1, 2}) {
    CommConfig bench = CommConfig::fromEnv().value(), framework = bench;
    bench.adaptToOversubscription(4, 2, nodes, false);
    framework.adaptToOversubscription(4, 2, nodes, true);
    EXPECT_GT(bench.yieldUsBeforeSleep, 0) << nodes;
    EXPECT_GT(bench.sharedMemoryYieldRounds, 1) << nodes;
    EXPECT_EQ(framework.yieldUsBeforeSleep, 0) << nodes;
    EXPECT_EQ(framework.sharedMemoryYieldRounds, 1) << nodes;
    EXPECT_EQ(framework.socketYieldRounds, 0) << nodes;
    EXPECT_EQ(bench.socketYieldRounds, nodes > 1 ? 2000 : 0) << nodes;
    CommConfig alone = CommConfig::fromEnv().value();
    alone.adaptToOversubscription(2, 2, nodes, true);
    EXPECT_EQ(alone.sharedMemoryYieldRounds, -1) << nodes;
    EXPECT_EQ(alone.yieldUsBeforeSleep, -1) << nodes;
  }
}

TEST_F(ConfigTest, EveryTunableHasMeaning) {
  for (const auto& t : allTunables()) {
    EXPECT_GT(std::string(t.meaning).size(), 10u) << t.name;
  }
}

}  // namespace
}  // namespace tutti
