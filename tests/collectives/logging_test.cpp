// TUTTI_DEBUG=INFO with TUTTI_DEBUG_FILE: init reports the version, the
// interface and the transport to each peer, in per-host-and-pid files.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/harness/files.h"
#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

// `net`: the network transport rank 0 must report for rank 2 ("socket" or "ucx").
void expectInfoLogShowsTransports(const std::string& net) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path.empty());
  const std::string dir = tmp.path;
  std::string pattern = dir + "/log.%h.%p";
  auto outcomes = runRanks(3, [&](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    tuttiCommDestroy(comm);
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    std::string log = slurp(dir + "/log." + host + "." + std::to_string(getpid()));
    for (const char* want : {"tutti 0.1.0", "interface lo", "INFO", "-> rank", "init done"})
      if (log.find(want) == std::string::npos) return std::string("log lacks \"") + want + "\":\n" + log;
    // Ranks 0 and 1 share a (fake) host: shm for host calls, P2P between
    // their (emulated) devices; rank 2 is elsewhere: the network transport,
    // with slots mapped into the device for device calls.
    auto says = [&log](const std::string& peer, const std::string& route) {
      for (size_t at = log.find("-> " + peer); at != std::string::npos; at = log.find("-> " + peer, at + 1)) {
        size_t end = log.find('\n', at);
        if (log.substr(at, end - at).find(route) != std::string::npos) return true;
      }
      return false;
    };
    if (ctx.rank == 0 &&
        (!says("rank 1 (", "host calls over shm/host") || !says("rank 1 (", "device calls over p2p/device") ||
         !says("rank 2 (", "host calls over " + net + "/host") ||
         !says("rank 2 (", "device calls over " + net + "/host-mapped") ||
         log.find("network transport " + net) == std::string::npos))
      return "rank 0's log does not show shm and p2p to rank 1, " + net + " to rank 2:\n" + log;
    return "";
  }, [&](int rank) {
    std::map<std::string, std::string> env{
        {"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_DEBUG", "INFO"}, {"TUTTI_DEBUG_FILE", pattern},
        {"TUTTI_HOSTID", rank < 2 ? "hostA" : "hostB"}, {"TUTTI_EMULATE_DEVICE", "1"}};
    if (net == "ucx") {
      env["TUTTI_NET"] = "ucx";
      env["UCX_TLS"] = "tcp";
      env["UCX_NET_DEVICES"] = "lo";
    }
    return env;
  });
  EXPECT_EQ(summarize(outcomes), "");
}

TEST(Logging, InfoReportsVersionInterfaceAndTransports) { expectInfoLogShowsTransports("socket"); }

// Network nodes that share one kernel and CPU set (containers or namespaces
// on one machine, faked with TUTTI_HOSTID) share its cores: 4 ranks of 2
// nodes on 2 cores yield at once (spin 0: their answers come over the
// network); 2 ranks of 2 nodes on those cores have one each, and spin.
std::string spinOf(int nranks) {
  TempDir tmp;
  const std::string pattern = tmp.path + "/log.%p";
  std::string found;
  auto outcomes = runRanks(nranks, [&](const RankContext& ctx) -> std::string {
    cpu_set_t all, two;
    CPU_ZERO(&two);
    if (sched_getaffinity(0, sizeof(all), &all) != 0) return "sched_getaffinity";
    for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < 2; ++cpu)
      if (CPU_ISSET(cpu, &all)) CPU_SET(cpu, &two), ++taken;
    if (sched_setaffinity(0, sizeof(two), &two) != 0) return "sched_setaffinity";
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    tuttiCommDestroy(comm);
    const std::string log = slurp(tmp.path + "/log." + std::to_string(getpid()));
    const size_t at = log.find("polls before yielding");
    if (at == std::string::npos) return "no spin line in the log:\n" + log;
    const size_t from = log.rfind("spin ", at);
    return ctx.rank == 0 ? "spin=" + log.substr(from + 5, at - from - 6) : "";
  }, [&](int rank) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_DEBUG", "INFO"},
                                              {"TUTTI_DEBUG_SUBSYS", "INIT"}, {"TUTTI_DEBUG_FILE", pattern},
                                              {"TUTTI_HOSTID", "node" + std::to_string(rank * 2 / nranks)}};
  });
  for (const auto& o : outcomes)
    if (o.rank == 0) found = o.failure;
    else if (!o.failure.empty()) return "rank " + std::to_string(o.rank) + ": " + o.failure;
  return found;
}

TEST(Logging, NodesSharingAKernelShareItsCores) {
  EXPECT_EQ(spinOf(4), "spin=0");
  EXPECT_NE(spinOf(2), "spin=0");
}
#ifdef TUTTI_HAVE_UCX
TEST(Logging, InfoReportsUcxPerPeerWhenChosen) { expectInfoLogShowsTransports("ucx"); }
#endif

TEST(Logging, SubsystemFilterAndLevel) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path.empty());
  const std::string dir = tmp.path;
  std::string pattern = dir + "/log.%p";
  auto outcomes = runRanks(2, [&](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    float x = 1;
    tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, comm, nullptr);
    tuttiCommDestroy(comm);
    std::string log = slurp(dir + "/log." + std::to_string(getpid()));
    // TRACE shows each call; ^INIT hides init's lines.
    if (log.find("allreduce #1 count 1") == std::string::npos) return "no TRACE line for the call:\n" + log;
    if (log.find("init done") != std::string::npos) return "INIT lines were not filtered out:\n" + log;
    return "";
  }, [&](int) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_DEBUG", "TRACE"},
                                              {"TUTTI_DEBUG_SUBSYS", "^INIT"}, {"TUTTI_DEBUG_FILE", pattern}};
  });
  EXPECT_EQ(summarize(outcomes), "");
}

}  // namespace
}  // namespace tutti_test
