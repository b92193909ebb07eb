// Bad input gets a clear error, never a crash or a hang: arguments, interface
// patterns, unique ids, a dead root, a rank killed mid-collective, abort.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

std::map<std::string, std::string> baseEnv(int) {
  return {{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "20"}};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Checks that `r` is `want` and the last error mentions every word.
std::string expectError(tuttiResult_t r, tuttiResult_t want, tuttiComm_t comm,
                        std::vector<std::string> words) {
  std::string msg = tuttiGetLastError(comm);
  if (r != want)
    return "expected " + std::string(tuttiGetErrorString(want)) + ", got " + tuttiGetErrorString(r) +
           " (" + msg + ")\n";
  for (const auto& w : words)
    if (!contains(msg, w)) return "error \"" + msg + "\" does not mention \"" + w + "\"\n";
  return "";
}

TEST(Errors, NullCommIsInvalidArgument) {
  float x = 0;
  EXPECT_EQ(tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, nullptr, nullptr), tuttiInvalidArgument);
  EXPECT_TRUE(contains(tuttiGetLastError(nullptr), "tuttiAllReduce"));
  EXPECT_TRUE(contains(tuttiGetLastError(nullptr), "comm is NULL"));
  EXPECT_EQ(tuttiBarrier(nullptr, nullptr), tuttiInvalidArgument);
  int n = 0;
  EXPECT_EQ(tuttiCommCount(nullptr, &n), tuttiInvalidArgument);
  for (int r = 0; r <= tuttiNumResults; ++r)
    EXPECT_NE(tuttiGetErrorString(static_cast<tuttiResult_t>(r)), nullptr);
  int v = 0;
  EXPECT_EQ(tuttiGetVersion(&v), tuttiSuccess);
  EXPECT_EQ(v, TUTTI_VERSION);
}

TEST(Errors, BadArgumentsNameCallAndArgument) {
  auto outcomes = runRanks(2, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    float buf[4] = {0};
    err += expectError(tuttiAllReduce(nullptr, buf, 4, tuttiFloat32, tuttiSum, comm, nullptr),
                       tuttiInvalidArgument, comm, {"tuttiAllReduce", "sendbuff", "rank"});
    err += expectError(tuttiAllReduce(buf, nullptr, 4, tuttiFloat32, tuttiSum, comm, nullptr),
                       tuttiInvalidArgument, comm, {"recvbuff"});
    err += expectError(tuttiAllReduce(buf, buf, 4, static_cast<tuttiDataType_t>(42), tuttiSum, comm, nullptr),
                       tuttiInvalidArgument, comm, {"datatype 42"});
    err += expectError(tuttiReduce(buf, buf, 4, tuttiFloat32, static_cast<tuttiRedOp_t>(9), 0, comm, nullptr),
                       tuttiInvalidArgument, comm, {"tuttiReduce", "op 9"});
    err += expectError(tuttiBroadcast(buf, buf, 4, tuttiFloat32, 2, comm, nullptr),
                       tuttiInvalidArgument, comm, {"tuttiBroadcast", "root 2"});
    err += expectError(tuttiReduce(buf, buf, 4, tuttiFloat32, tuttiSum, -1, comm, nullptr),
                       tuttiInvalidArgument, comm, {"root -1"});
    err += expectError(tuttiSend(buf, 4, tuttiFloat32, 5, comm, nullptr), tuttiInvalidArgument,
                       comm, {"tuttiSend", "peer 5"});
    err += expectError(tuttiRecv(buf, 4, tuttiFloat32, -3, comm, nullptr), tuttiInvalidArgument,
                       comm, {"tuttiRecv", "peer -3"});
    err += expectError(tuttiAllGather(buf, buf, SIZE_MAX / 4, tuttiFloat32, comm, nullptr),
                       tuttiInvalidArgument, comm, {"tuttiAllGather", "sendcount", "PTRDIFF_MAX"});
    // Byte sizes past PTRDIFF_MAX but within SIZE_MAX (these once segfaulted
    // every rank), per rank and in total, and buffers that wrap around.
    err += expectError(tuttiAllReduce(buf, buf, SIZE_MAX - 5, tuttiInt8, tuttiSum, comm, nullptr),
                       tuttiInvalidArgument, comm, {"tuttiAllReduce", "count", "PTRDIFF_MAX"});
    err += expectError(tuttiBroadcast(buf, buf, (SIZE_MAX >> 1) / 8 + 1, tuttiFloat64, 0, comm, nullptr),
                       tuttiInvalidArgument, comm, {"tuttiBroadcast", "count", "PTRDIFF_MAX"});
    err += expectError(tuttiReduceScatter(buf, buf, (SIZE_MAX >> 1) / 2 + 1, tuttiInt8, tuttiSum, comm, nullptr),
                       tuttiInvalidArgument, comm, {"tuttiReduceScatter", "recvcount", "PTRDIFF_MAX"});
    void* top = reinterpret_cast<void*>(UINTPTR_MAX - 64);
    err += expectError(tuttiAllReduce(buf, top, 1000, tuttiFloat32, tuttiSum, comm, nullptr),
                       tuttiInvalidArgument, comm, {"tuttiAllReduce", "recvbuff", "address space"});
    err += expectError(tuttiSend(top, 1000, tuttiFloat32, 1 - ctx.rank, comm, nullptr),
                       tuttiInvalidArgument, comm, {"tuttiSend", "sendbuff", "address space"});
    // Count 0 with no buffers is legal and does nothing; the comm still works.
    if (tuttiAllReduce(nullptr, nullptr, 0, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
      err += "count 0 failed\n";
    buf[0] = static_cast<float>(ctx.rank + 1);
    if (tuttiAllReduce(buf, buf, 1, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess || buf[0] != 3)
      err += "the comm does not work after the rejected calls\n";
    tuttiCommDestroy(comm);
    return err;
  }, baseEnv);
  EXPECT_EQ(summarize(outcomes), "");
}

// Pointers that are no communicator: zeroed memory, random bytes, a
// destroyed handle's memory (reused as a plain buffer here, so the test
// reads no freed memory). Refused at every entry point, naming the call.
TEST(Errors, HandleWithoutMagicWordIsRefused) {
  alignas(64) static unsigned char fake[4096];
  std::vector<tuttiComm_t> strays;
  std::memset(fake, 0, sizeof(fake));
  strays.push_back(reinterpret_cast<tuttiComm_t>(fake));
  static unsigned char noise[4096];
  for (size_t i = 0; i < sizeof(noise); ++i) noise[i] = static_cast<unsigned char>(i * 131 + 7);
  strays.push_back(reinterpret_cast<tuttiComm_t>(noise));
  for (tuttiComm_t bad : strays) {
    float x = 0;
    int n = 0;
    tuttiResult_t async;
    tuttiComm_t child = nullptr;
    std::string err;
    auto check = [&](tuttiResult_t r, const char* api) {
      err += expectError(r, tuttiInvalidArgument, nullptr, {api, "not a tutti communicator"});
    };
    check(tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, bad, nullptr), "tuttiAllReduce");
    check(tuttiBarrier(bad, nullptr), "tuttiBarrier");
    check(tuttiSend(&x, 1, tuttiFloat32, 0, bad, nullptr), "tuttiSend");
    check(tuttiCommCount(bad, &n), "tuttiCommCount");
    check(tuttiCommUserRank(bad, &n), "tuttiCommUserRank");
    check(tuttiCommGetAsyncError(bad, &async), "tuttiCommGetAsyncError");
    check(tuttiCommSplit(bad, 0, 0, &child, nullptr), "tuttiCommSplit");
    check(tuttiCommFinalize(bad), "tuttiCommFinalize");
    check(tuttiCommDestroy(bad), "tuttiCommDestroy");
    check(tuttiCommAbort(bad), "tuttiCommAbort");
    EXPECT_NE(tuttiGetLastError(bad), nullptr);
    EXPECT_EQ(err, "");
  }
  // A live handle's first word is its magic: a copy of a real handle's
  // bytes with that word cleared is refused too.
  auto outcomes = runRanks(1, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    alignas(64) static unsigned char copy[64];
    std::memcpy(copy, comm, sizeof(copy));
    std::memset(copy, 0, 8);
    int n = 0;
    err += expectError(tuttiCommCount(reinterpret_cast<tuttiComm_t>(copy), &n), tuttiInvalidArgument,
                       nullptr, {"tuttiCommCount", "not a tutti communicator"});
    if (tuttiCommCount(comm, &n) != tuttiSuccess || n != 1) err += "the real handle stopped working\n";
    tuttiCommDestroy(comm);
    return err;
  }, baseEnv);
  EXPECT_EQ(summarize(outcomes), "");
}

TEST(Errors, InitArgumentsAreChecked) {
  auto outcomes = runRanks(1, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err;
    err += expectError(tuttiCommInitRank(&comm, 2, ctx.id, 2), tuttiInvalidArgument, nullptr, {"rank 2"});
    err += expectError(tuttiCommInitRank(&comm, 0, ctx.id, 0), tuttiInvalidArgument, nullptr, {"nranks"});
    tuttiUniqueId empty;
    memset(&empty, 0, sizeof(empty));
    err += expectError(tuttiCommInitRank(&comm, 1, empty, 0), tuttiInvalidArgument, nullptr, {"unique id"});
    return err;
  }, baseEnv);
  EXPECT_EQ(summarize(outcomes), "");
}

TEST(Errors, InterfacePatternMatchingNothingListsInterfaces) {
  auto outcomes = runRanks(1, [](const RankContext&) -> std::string {
    setenv("TUTTI_SOCKET_IFNAME", "=nosuchif0", 1);
    tuttiUniqueId id;
    std::string err = expectError(tuttiGetUniqueId(&id), tuttiInvalidArgument, nullptr,
                                  {"nosuchif0", "interfaces here", "lo"});
    setenv("NCCL_SOCKET_IFNAME", "^lo", 1);  // the TUTTI_ one wins over NCCL_
    err += expectError(tuttiGetUniqueId(&id), tuttiInvalidArgument, nullptr, {"nosuchif0"});
    return err;
  }, baseEnv);
  EXPECT_EQ(summarize(outcomes), "");
}

// A unique id whose root has gone: the process that made it exited.
tuttiUniqueId idOfDeadRoot() {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    tuttiUniqueId id;
    tuttiGetUniqueId(&id);
    (void)!write(fds[1], &id, sizeof(id));
    _exit(0);
  }
  tuttiUniqueId id;
  EXPECT_EQ(read(fds[0], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
  waitpid(pid, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
  return id;
}

TEST(Errors, AbsentRootTimesOutWithItsAddress) {
  tuttiUniqueId dead = idOfDeadRoot();
  auto outcomes = runRanks(1, [dead](const RankContext&) -> std::string {
    setenv("TUTTI_TIMEOUT", "2", 1);
    tuttiComm_t comm = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    std::string err = expectError(tuttiCommInitRank(&comm, 2, dead, 1), tuttiTimeout, nullptr,
                                  {"root", "127.0.0.1:"});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 10) err += "took " + std::to_string(s) + " s for a 2 s timeout\n";
    return err;
  }, baseEnv);
  EXPECT_EQ(summarize(outcomes), "");
}

TEST(Errors, WrongMagicIsDroppedAndTimesOut) {
  auto outcomes = runRanks(2, [](const RankContext& ctx) -> std::string {
    setenv("TUTTI_TIMEOUT", "2", 1);
    if (ctx.rank == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(4));  // keep the root alive
      return "";
    }
    tuttiUniqueId forged = ctx.id;
    forged.internal[0] ^= 0x5a;  // another job's magic, same address
    tuttiComm_t comm = nullptr;
    return expectError(tuttiCommInitRank(&comm, 2, forged, 1), tuttiTimeout, nullptr,
                       {"127.0.0.1:", "unique id"});
  }, baseEnv);
  EXPECT_EQ(summarize(outcomes), "");
}

// Settings every rank must share, set otherwise on rank 1: both ranks'
// init fails naming it. (Kept call times read on one rank only would price
// the algorithms differently there, and the ranks would run different plans.)
TEST(Errors, MismatchedSharedSettingsAreRefused) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"TUTTI_BUFFSIZE", "2097152"}, {"TUTTI_MEASURE_LINKS", "0"}, {"TUTTI_KEEP_CALL_TIMES", "0"}}) {
    auto outcomes = runRanks(2, [&, name = name](const RankContext& ctx) -> std::string {
      tuttiComm_t comm = nullptr;
      tuttiResult_t r = tuttiCommInitRank(&comm, 2, ctx.id, ctx.rank);
      std::string msg = tuttiGetLastError(nullptr);
      if (r != tuttiInvalidUsage || !contains(msg, name))
        return "expected a config mismatch error naming " + name + ", got " + std::string(tuttiGetErrorString(r)) +
               ": " + msg;
      return "";
    }, [&, name = name, value = value](int rank) {
      auto env = baseEnv(rank);
      if (rank == 1) env[name] = value;  // not the default
      return env;
    });
    EXPECT_EQ(summarize(outcomes), "") << name;
  }
}

// Transports state their own settings, which init compares: rank 1 of 3
// uses 2 sockets per connection and the others 1. Every rank names a rank
// that differs from it, and the variables.
TEST(Errors, MismatchedSocketStreamsAreNamedOnEveryRank) {
  auto outcomes = runRanks(3, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitRank(&comm, 3, ctx.id, ctx.rank);
    std::string msg = tuttiGetLastError(nullptr);
    std::string odd = ctx.rank == 1 ? "rank 0" : "rank 1";
    if (r != tuttiInvalidUsage || !contains(msg, "sockets per connection") || !contains(msg, odd) ||
        !contains(msg, "TUTTI_NSOCKS_PERTHREAD"))
      return "expected a socket streams mismatch naming " + odd + ", got " +
             std::string(tuttiGetErrorString(r)) + ": " + msg;
    return "";
  }, [](int rank) {
    auto env = baseEnv(rank);
    env["TUTTI_SHM_DISABLE"] = "1";
    env["TUTTI_NET"] = "socket";
    env["TUTTI_RING_ORDER"] = "rank";
    if (rank == 1) env["TUTTI_NSOCKS_PERTHREAD"] = "2";
    return env;
  });
  EXPECT_EQ(summarize(outcomes), "");
}

#ifdef TUTTI_HAVE_UCX
TEST(Errors, MismatchedNetworkTransportIsRefusedNamingBoth) {
  auto outcomes = runRanks(2, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitRank(&comm, 2, ctx.id, ctx.rank);
    std::string msg = tuttiGetLastError(nullptr);
    if (r != tuttiInvalidUsage || !contains(msg, "uses the ucx network transport and rank 0 socket"))
      return "expected a transport mismatch error, got " + std::string(tuttiGetErrorString(r)) + ": " + msg;
    return "";
  }, [](int rank) {
    auto env = baseEnv(rank);
    if (rank == 1) env["TUTTI_NET"] = "ucx";
    return env;
  });
  EXPECT_EQ(summarize(outcomes), "");
}
#endif

// Rank 2 dies while all ranks are inside a stream of large all-reduces.
// `net`: "shm", "socket" or "ucx" (every pair over that transport).
void killedRankTest(const std::string& net) {
  const int n = 4, victim = 2;
  auto outcomes = runRanks(n, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    std::vector<float> buf(4 << 20, 1.0f);
    if (ctx.rank == victim)
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        raise(SIGKILL);
      }).detach();
    auto t0 = std::chrono::steady_clock::now();
    tuttiResult_t r = tuttiSuccess;
    for (int i = 0; i < 100000 && r == tuttiSuccess; ++i)
      r = tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiMax, comm, nullptr);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string msg = tuttiGetLastError(comm);
    tuttiResult_t async = tuttiSuccess;
    tuttiCommGetAsyncError(comm, &async);
    tuttiCommAbort(comm);
    if (r == tuttiSuccess) return "never saw the failure";
    if (r != tuttiRemoteError && r != tuttiSystemError)
      return "expected a remote error, got " + std::string(tuttiGetErrorString(r)) + ": " + msg;
    if (!contains(msg, "rank 2")) return "error does not name the dead rank 2: " + msg;
    if (!contains(msg, "tuttiAllReduce") || !contains(msg, "allreduce #"))
      return "error does not name the call: " + msg;
    if (s > 20) return "took " + std::to_string(s) + " s, longer than TUTTI_TIMEOUT";
    if (async != tuttiRemoteError) return "async error not set";
    return "";
  }, [net](int rank) {
    auto env = baseEnv(rank);
    if (net != "shm") env["TUTTI_SHM_DISABLE"] = "1";
    if (net == "ucx") {
      env["TUTTI_NET"] = "ucx";
      env["UCX_TLS"] = "tcp";
      env["UCX_NET_DEVICES"] = "lo";
    }
    return env;
  }, 120);
  for (const auto& o : outcomes) {
    if (o.rank == victim) EXPECT_TRUE(contains(o.failure, "signal 9")) << o.failure;
    else EXPECT_EQ(o.failure, "") << "rank " << o.rank;
  }
}

TEST(Errors, KilledRankFailsEverySurvivorOverShm) { killedRankTest("shm"); }
TEST(Errors, KilledRankFailsEverySurvivorOverSockets) { killedRankTest("socket"); }
#ifdef TUTTI_HAVE_UCX
TEST(Errors, KilledRankFailsEverySurvivorOverUcx) { killedRankTest("ucx"); }
#endif

TEST(Errors, UnusableNetworkTransportIsRefusedWithTheReason) {
  auto outcomes = runRanks(2, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (err.empty()) {
      tuttiCommDestroy(comm);
      return "init succeeded with TUTTI_NET=ib and no RDMA device";
    }
    if (!contains(err, "TUTTI_NET=ib") || !contains(err, "cannot run here"))
      return "error does not say why: " + err;
    return "";
  }, [](int rank) {
    auto env = baseEnv(rank);
    env["TUTTI_NET"] = "ib";
    return env;
  });
  EXPECT_EQ(summarize(outcomes), "");
}

// Rank 1 never joins the all-reduce rank 0 waits in; `stop`, from another
// thread 300 ms in, must end that wait within 5 s with an error that says it
// was aborted; then `after` checks the handle, where `stop` left it valid.
// The waiting call must end soon after the stop, over shared memory or
// over TCP (where it sleeps in poll() between looks at its connections).
std::string stoppedWhileWaiting(const std::function<void(tuttiComm_t)>& stop,
                                const std::function<std::string(tuttiComm_t)>& after, bool overTcp = false) {
  auto outcomes = runRanks(2, [&](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    if (ctx.rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      tuttiCommDestroy(comm);
      return "";
    }
    std::atomic<int64_t> stoppedAt{0};
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stoppedAt = std::chrono::steady_clock::now().time_since_epoch().count();
      stop(comm);
    });
    float x = 1;
    auto t0 = std::chrono::steady_clock::now();
    tuttiResult_t r = tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, comm, nullptr);
    const auto t1 = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(t1 - t0).count();
    std::string msg = tuttiGetLastError(nullptr);
    stopper.join();
    const double afterStop = std::chrono::duration<double>(
        t1 - std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(stoppedAt.load()))).count();
    if (r == tuttiSuccess) return "the call succeeded without its peer";
    if (!contains(msg, "abort")) return "error does not say it was aborted: " + msg;
    if (s > 5) return "the call ended " + std::to_string(s) + " s after it began";
    if (afterStop > 0.4) return "the call ended " + std::to_string(afterStop) + " s after the stop";
    return after ? after(comm) : "";
  }, [overTcp](int rank) {
    auto env = baseEnv(rank);
    env["TUTTI_TIMEOUT"] = "60";
    if (overTcp) env["TUTTI_SHM_DISABLE"] = "1";
    return env;
  });
  return summarize(outcomes);
}

TEST(Errors, AbortFromAnotherThreadUnblocksAWaitingCall) {
  EXPECT_EQ(stoppedWhileWaiting([](tuttiComm_t comm) { tuttiCommAbort(comm); }, nullptr), "");
}

TEST(Errors, RevokeFromAnotherThreadUnblocksAWaitingCallAndKeepsTheHandle) {
  auto revoke = [](tuttiComm_t comm) { tuttiCommRevoke(comm, 0); };
  auto handleStillServes = [](tuttiComm_t comm) -> std::string {
    if (tuttiCommRevoke(comm, 1) != tuttiInvalidArgument) return "revokeFlags 1 was taken";
    int rank = -1;
    if (tuttiCommUserRank(comm, &rank) != tuttiSuccess || rank != 0) return "a query failed after revoke";
    float x = 1;
    if (tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, comm, nullptr) == tuttiSuccess)
      return "a call after revoke succeeded";
    if (!contains(tuttiGetLastError(comm), "aborted"))
      return std::string("a call after revoke said: ") + tuttiGetLastError(comm);
    if (tuttiCommDestroy(comm) != tuttiSuccess) return "destroy after revoke failed";
    return "";
  };
  EXPECT_EQ(stoppedWhileWaiting(revoke, handleStillServes), "");
}

TEST(Errors, RevokeFromAnotherThreadUnblocksACallWaitingOnTcpAtOnce) {
  EXPECT_EQ(stoppedWhileWaiting([](tuttiComm_t comm) { tuttiCommRevoke(comm, 0); },
                                [](tuttiComm_t comm) { return tuttiCommDestroy(comm) == tuttiSuccess ? "" : "destroy"; },
                                true),
            "");
}

// All but the last rank wait for it in one call; rank 0 revokes. The
// others' calls end too (a host-mate's revoke reaches them), and their error
// must say that rank 0 revoked the communicator, not that it failed: every
// rank of a PyTorch job that aborts its group sees one of the two.
TEST(Errors, AHostMatesRevokeEndsACallSayingItWasRevokedNotFailed) {
  auto outcomes = runRanks(3, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    if (std::string err = initComm(ctx, &comm); !err.empty()) return err;
    if (ctx.rank == 2) {  // never calls
      std::this_thread::sleep_for(std::chrono::seconds(3));
      tuttiCommAbort(comm);
      return "";
    }
    std::thread revoker;
    if (ctx.rank == 0)
      revoker = std::thread([comm] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        tuttiCommRevoke(comm, 0);
      });
    float x = 1;
    const tuttiResult_t r = tuttiAllReduce(&x, &x, 1, tuttiFloat32, tuttiSum, comm, nullptr);
    const std::string msg = tuttiGetLastError(nullptr);
    if (revoker.joinable()) revoker.join();
    tuttiCommAbort(comm);
    if (r == tuttiSuccess) return "the call succeeded without rank 2";
    if (ctx.rank == 1 && !(contains(msg, "rank 0 revoked") && !contains(msg, "failed")))
      return "rank 0's revoke ended rank 1's call saying: " + msg;
    return "";
  }, [](int rank) {
    auto env = baseEnv(rank);
    env["TUTTI_TIMEOUT"] = "60";
    return env;
  });
  EXPECT_EQ(summarize(outcomes), "");
}

}  // namespace
}  // namespace tutti_test
