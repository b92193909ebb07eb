#include "tests/harness/shrink_trial.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <optional>
#include <memory>
#include <thread>

#include "tests/collectives/collective_cases.h"
#include "tests/harness/api_case_device.h"

namespace tutti_test {

namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// All-reduces of changing sizes until one fails (a peer failed).
tuttiResult_t callUntilFailure(tuttiComm_t comm) {
  std::vector<float> buf(1 << 16, 1.0f);
  tuttiResult_t r = tuttiSuccess;
  for (int calls = 0; calls < 1000000 && r == tuttiSuccess; ++calls)
    r = tuttiAllReduce(buf.data(), buf.data(), 1 + calls % 4096, tuttiFloat32, tuttiMax, comm, nullptr);
  return r;
}

// What this process holds that a communicator adds to: threads, open file
// descriptors (sockets among them) and mappings of shared-memory segments.
struct Holdings {
  int threads = 0, fds = 0, shmMappings = 0;
  bool operator==(const Holdings& o) const {
    return threads == o.threads && fds == o.fds && shmMappings == o.shmMappings;
  }
  std::string str() const {
    return std::to_string(threads) + " threads, " + std::to_string(fds) + " file descriptors, " +
           std::to_string(shmMappings) + " shared-memory mappings";
  }
};

int entriesOf(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

Holdings holdingsNow() {
  Holdings h{entriesOf("/proc/self/task"), entriesOf("/proc/self/fd"), 0};
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) h.shmMappings += line.find(" /dev/shm/") != std::string::npos;
  return h;
}

// Once it holds still: a rendezvous root's thread ends just after its last
// answer, and a connection's closing may trail its communicator's destroy.
Holdings settledHoldings() {
  Holdings last = holdingsNow();
  for (int reads = 0; reads < 40; ++reads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const Holdings now = holdingsNow();
    if (now == last) return now;
    last = now;
  }
  return last;
}

// What this process holds once it has run a communicator of its own (one
// rank, every call at one count) and destroyed it: what tutti keeps for the
// process's life (a thread answering hang queries; the emulated device's)
// included. Quick: the parent's rendezvous waits only TUTTI_TIMEOUT for it.
Holdings holdingsOnceTuttiRan(bool deviceBuffers) {
  tuttiUniqueId id;
  tuttiComm_t alone = nullptr;
  if (tuttiGetUniqueId(&id) == tuttiSuccess && tuttiCommInitRank(&alone, 1, id, 0) == tuttiSuccess) {
    std::unique_ptr<ApiCaseDevice> device;
    if (deviceBuffers) device = std::make_unique<ApiCaseDevice>();
    runEveryCase(alone, 0, 1, {1}, device.get(), 77);
    tuttiCommDestroy(alone);
  }
  return settledHoldings();
}

// After the shrink, with the parent aborted, nothing of the excluded rank
// is left: while the shrunk communicator lives this process holds what the
// same survivors' communicator made from scratch holds once it has run the
// same calls, and once it is destroyed, what it held before the parent's
// init (where that is known). "" or the difference.
std::string leftNothingBehind(tuttiComm_t& child, int rank, int n, const ShrinkTrial& t,
                              const std::optional<Holdings>& before) {
  const Holdings shrunk = settledHoldings();
  tuttiUniqueId id{};
  if (rank == 0 && tuttiGetUniqueId(&id) != tuttiSuccess)
    return std::string("tuttiGetUniqueId: ") + tuttiGetLastError(nullptr);
  if (tuttiBroadcast(&id, &id, sizeof id, tuttiUint8, 0, child, nullptr) != tuttiSuccess)
    return std::string("sharing the fresh communicator's id: ") + tuttiGetLastError(child);
  tuttiCommDestroy(child);
  child = nullptr;
  const Holdings after = settledHoldings();
  tuttiComm_t fresh = nullptr;
  if (tuttiCommInitRank(&fresh, n, id, rank) != tuttiSuccess)
    return std::string("a fresh communicator of the survivors: ") + tuttiGetLastError(nullptr);
  std::string err = checkEveryCall(fresh, rank, n, t.deviceBuffers);
  const Holdings made = settledHoldings();
  tuttiCommDestroy(fresh);
  if (!err.empty()) return "the fresh communicator: " + err;
  if (before && !(after == *before))
    return "before the parent's init this rank held " + before->str() + "; after the shrunk communicator's destroy, " +
           after.str();
  if (t.holdsWhatAFreshOneHolds && !(shrunk == made))
    return "after the shrink and the parent's abort this rank holds " + shrunk.str() +
           "; with a communicator of the same ranks made from scratch, " + made.str();
  return "";
}

std::string survivor(tuttiComm_t comm, const RankContext& ctx, const ShrinkTrial& t, const std::optional<Holdings>& before) {
  Clock::time_point failedAt;
  tuttiComm_t child = nullptr;
  tuttiResult_t shrunk;
  int victim = t.victimRank;
  if (t.victim == Victim::kSilent) {
    // The victim never enters this call; another thread revokes and shrinks.
    std::vector<float> buf(1000, 1.0f);
    auto inCall = std::async(std::launch::async, [&] {
      return tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, nullptr);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    failedAt = Clock::now();
    shrunk = tuttiCommShrink(comm, &victim, 1, &child, nullptr, TUTTI_SHRINK_ABORT);
    if (inCall.wait_for(std::chrono::seconds(t.timeoutSeconds + 5)) != std::future_status::ready)
      return "the call in flight did not end after the shrink revoked the communicator";
    if (inCall.get() == tuttiSuccess) return "the call the victim never entered succeeded";
  } else {
    const tuttiResult_t r = callUntilFailure(comm);
    failedAt = Clock::now();
    if (r == tuttiSuccess) return std::string("never saw the ") + victimLabel(t.victim) + " rank";
    // Nobody lists the victim: the survivors exclude whom tutti named.
    shrunk = tuttiCommShrink(comm, nullptr, 0, &child, nullptr, TUTTI_SHRINK_EXCLUDE_FAILED);
  }
  if (shrunk != tuttiSuccess) return std::string("tuttiCommShrink: ") + tuttiGetLastError(comm);
  int n = 0, rank = -1;
  tuttiCommCount(child, &n);
  tuttiCommUserRank(child, &rank);
  const int wantRank = ctx.rank - (ctx.rank > victim ? 1 : 0);
  if (n != ctx.nranks - 1 || rank != wantRank)
    return "the shrunk communicator has " + std::to_string(n) + " ranks and this one is " + std::to_string(rank) +
           "; want " + std::to_string(ctx.nranks - 1) + " and " + std::to_string(wantRank);
  float one = 1, sum = 0;
  if (tuttiAllReduce(&one, &sum, 1, tuttiFloat32, tuttiSum, child, nullptr) != tuttiSuccess || sum != n)
    return std::string("the first call of the shrunk communicator: ") + tuttiGetLastError(child);
  fprintf(stderr, "rank %d: %s victim %d: %.1f ms from the failed call to the shrunk communicator's first call\n",
          ctx.rank, victimLabel(t.victim), victim, msSince(failedAt));
  // The parent goes first, as a job that shrank lets go of it.
  tuttiCommAbort(comm);
  std::string err = checkEveryCall(child, rank, n, t.deviceBuffers);
  if (err.empty()) err = leftNothingBehind(child, rank, n, t, before);
  if (child) tuttiCommDestroy(child);
  return err;
}

}  // namespace

const char* victimLabel(Victim v) {
  return v == Victim::kKilled ? "killed" : v == Victim::kStopped ? "stopped" : "silent";
}

void signalMeLater(Victim v, int ms, int timeoutSeconds) {
  const pid_t victim = getpid();
  if (fork() != 0) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (v == Victim::kStopped) {
    kill(victim, SIGSTOP);
    std::this_thread::sleep_for(std::chrono::seconds(timeoutSeconds + 8));
  }
  kill(victim, SIGKILL);
  _exit(0);
}

std::string checkEveryCall(tuttiComm_t comm, int rank, int nranks, bool deviceBuffers) {
  std::unique_ptr<ApiCaseDevice> device;
  if (deviceBuffers) device = std::make_unique<ApiCaseDevice>();
  return runEveryCase(comm, rank, nranks, {0, 1, 7, 1031, 65537}, device.get(), 77);
}

std::string runShrinkRank(const RankContext& ctx, const ShrinkTrial& t) {
  // Every rank warms up alike (the parent's init waits for the slowest). Rank
  // 0 hosts the parent's rendezvous (tests/harness/ranks.h) until every rank
  // has joined: its holdings now are no baseline.
  std::optional<Holdings> before = holdingsOnceTuttiRan(t.deviceBuffers);
  if (ctx.rank == 0) before.reset();
  tuttiComm_t comm = nullptr;
  if (std::string err = initComm(ctx, &comm); !err.empty()) return err;
  if (ctx.rank != t.victimRank) return survivor(comm, ctx, t, before);
  if (t.victim != Victim::kSilent) {
    signalMeLater(t.victim, 200, t.timeoutSeconds);
    callUntilFailure(comm);
    for (;;) pause();  // the signal comes
  }
  // Alive and not calling, until the survivors are surely done.
  std::this_thread::sleep_for(std::chrono::seconds(t.timeoutSeconds + 8));
  tuttiCommAbort(comm);
  return "";
}

std::string shrinkTrialStory(const std::vector<RankOutcome>& outcomes, const ShrinkTrial& t) {
  std::string story;
  for (const auto& o : outcomes) {
    if (o.rank == t.victimRank && t.victim != Victim::kSilent) {
      if (o.failure.find("signal 9") == std::string::npos)
        story += "  the victim, rank " + std::to_string(o.rank) + ", was not killed: " + o.failure + "\n";
    } else if (!o.failure.empty()) {
      story += "  rank " + std::to_string(o.rank) + ": " + o.failure + "\n";
    }
  }
  return story;
}

}  // namespace tutti_test
