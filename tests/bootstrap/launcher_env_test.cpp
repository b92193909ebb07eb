// Rank, size and rendezvous from torchrun, Open MPI, PMI and Slurm variables.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "src/bootstrap/launcher_env.h"

namespace tutti {
namespace {

EnvLookup from(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(LauncherEnv, Torchrun) {
  auto e = readLauncherEnv(from({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                 {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}}));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->size, 8);
  EXPECT_EQ(e->localRank, 1);
  EXPECT_EQ(e->rendezvous, "10.0.0.1:29500");
}

TEST(LauncherEnv, OpenMpiWithCommId) {
  auto e = readLauncherEnv(from({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                 {"TUTTI_COMM_ID", "node1:4000"}}));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->launcher, "Open MPI");
  EXPECT_EQ(e->rendezvous, "node1:4000");
}

TEST(LauncherEnv, PmiAndSlurmAndNcclFallback) {
  auto p = readLauncherEnv(from({{"PMI_RANK", "0"}, {"PMI_SIZE", "4"}, {"NCCL_COMM_ID", "h:1"}}));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->size, 4);
  EXPECT_EQ(p->rendezvous, "h:1");
  auto s = readLauncherEnv(from({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"},
                                 {"MASTER_ADDR", "::1"}, {"MASTER_PORT", "7"}}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rank, 5);
  EXPECT_EQ(s->rendezvous, "[::1]:7");
}

TEST(LauncherEnv, ClearErrors) {
  auto none = readLauncherEnv(from({}));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("RANK"), std::string::npos);
  auto bad = readLauncherEnv(from({{"RANK", "x"}, {"WORLD_SIZE", "2"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("RANK=\"x\""), std::string::npos);
  auto range = readLauncherEnv(from({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"},
                                     {"MASTER_PORT", "1"}}));
  EXPECT_FALSE(range.ok());
  auto noAddr = readLauncherEnv(from({{"RANK", "0"}, {"WORLD_SIZE", "2"}}));
  ASSERT_FALSE(noAddr.ok());
  EXPECT_NE(noAddr.status().message().find("MASTER_ADDR"), std::string::npos);
}

}  // namespace
}  // namespace tutti
