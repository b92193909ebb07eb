#include "tests/harness/ranks.h"

#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace tutti_test {

namespace {

bool readAll(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = read(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= n;
  }
  return true;
}

void writeAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = write(fd, p, bytes);
    if (n <= 0) return;
    p += n;
    bytes -= n;
  }
}

[[noreturn]] void childMain(int rank, int nranks, int idRead, int idWrite, int report,
                            const RankBody& body, const RankEnv& env) {
  if (env)
    for (const auto& [k, v] : env(rank)) setenv(k.c_str(), v.c_str(), 1);
  // A rank of a multi-node test runs inside its node's network namespace.
  if (const char* ns = getenv("TUTTI_TEST_NETNS")) {
    int fd = open(("/var/run/netns/" + std::string(ns)).c_str(), O_RDONLY | O_CLOEXEC);
    // As `ip netns exec` does: sysfs shows the namespace of whoever mounted
    // it, so a private mount of it shows this node's interfaces (UCX and the
    // topology read /sys/class/net).
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0 || unshare(CLONE_NEWNS) != 0 ||
        mount("", "/", nullptr, MS_SLAVE | MS_REC, nullptr) != 0 || umount2("/sys", MNT_DETACH) != 0 ||
        mount(ns, "/sys", "sysfs", 0, nullptr) != 0) {
      std::string msg = "cannot enter network namespace " + std::string(ns) + ": " + strerror(errno);
      writeAll(report, msg.data(), msg.size());
      _exit(3);
    }
    close(fd);
  }
  RankContext ctx{rank, nranks, {}};
  std::string failure;
  // Only rank 0 keeps the write end: if it dies first, the others read EOF.
  close(rank == 0 ? idRead : idWrite);
  if (rank == 0) {
    if (tuttiGetUniqueId(&ctx.id) != tuttiSuccess) {
      failure = std::string("tuttiGetUniqueId: ") + tuttiGetLastError(nullptr);
      memset(&ctx.id, 0, sizeof(ctx.id));
    }
    for (int i = 1; i < nranks; ++i) writeAll(idWrite, &ctx.id, sizeof(ctx.id));
  } else if (!readAll(idRead, &ctx.id, sizeof(ctx.id))) {
    failure = "could not read the unique id from rank 0";
  }
  if (failure.empty()) failure = body(ctx);
  writeAll(report, failure.data(), failure.size());
  close(report);
  // Rank 0 hosts the rendezvous thread: give it no chance to outlive us badly.
  fflush(stdout);
  fflush(stderr);
  _exit(failure.empty() ? 0 : 1);
}

}  // namespace

std::vector<RankOutcome> runRanks(int nranks, const RankBody& body, const RankEnv& env,
                                  int limitSeconds) {
  int idPipe[2];
  if (pipe(idPipe) != 0) return {{0, "pipe failed"}};
  std::vector<pid_t> pids(nranks);
  std::vector<int> reports(nranks);
  for (int r = 0; r < nranks; ++r) {
    int rep[2];
    if (pipe(rep) != 0) return {{r, "pipe failed"}};
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      close(rep[0]);
      childMain(r, nranks, idPipe[0], idPipe[1], rep[1], body, env);
    }
    close(rep[1]);
    pids[r] = pid;
    reports[r] = rep[0];
  }
  close(idPipe[0]);
  close(idPipe[1]);

  std::vector<RankOutcome> out(nranks);
  std::vector<std::string> text(nranks);
  std::vector<bool> open(nranks, true);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limitSeconds);
  int remaining = nranks;
  bool timedOut = false;
  // Drain every report pipe (a full pipe would block its writer) until all close.
  while (remaining > 0) {
    std::vector<pollfd> fds;
    std::vector<int> who;
    for (int r = 0; r < nranks; ++r)
      if (open[r]) {
        fds.push_back({reports[r], POLLIN, 0});
        who.push_back(r);
      }
    int rc = poll(fds.data(), fds.size(), 200);
    if (std::chrono::steady_clock::now() > deadline) {
      timedOut = true;
      break;
    }
    if (rc <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        text[who[i]].append(buf, n);
      } else {
        open[who[i]] = false;
        --remaining;
      }
    }
  }
  for (int r = 0; r < nranks; ++r) {
    if (timedOut) kill(pids[r], SIGKILL);
    int status = 0;
    waitpid(pids[r], &status, 0);
    close(reports[r]);
    out[r].rank = r;
    out[r].failure = text[r];
    if (timedOut && open[r])
      out[r].failure += "rank hung past the test's limit of " + std::to_string(limitSeconds) + " s";
    else if (WIFSIGNALED(status))
      out[r].failure += " (killed by signal " + std::to_string(WTERMSIG(status)) + ")";
    else if (WEXITSTATUS(status) != 0 && out[r].failure.empty())
      out[r].failure = "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return out;
}

std::string summarize(const std::vector<RankOutcome>& outcomes) {
  std::string s;
  for (const auto& o : outcomes)
    if (!o.failure.empty()) s += "rank " + std::to_string(o.rank) + ": " + o.failure + "\n";
  return s;
}

std::string runThreadRanks(int nranks, const ThreadRankBody& body) {
  tuttiUniqueId id;
  if (tuttiGetUniqueId(&id) != tuttiSuccess) return std::string("unique id: ") + tuttiGetLastError(nullptr);
  std::vector<std::string> errors(nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) threads.emplace_back([&, r] { errors[r] = body(r, id); });
  std::string all;
  for (int r = 0; r < nranks; ++r) {
    threads[r].join();
    if (!errors[r].empty()) all += "thread rank " + std::to_string(r) + ": " + errors[r] + "\n";
  }
  return all;
}

std::string initComm(const RankContext& ctx, tuttiComm_t* comm) {
  tuttiResult_t r = tuttiCommInitRank(comm, ctx.nranks, ctx.id, ctx.rank);
  if (r != tuttiSuccess)
    return std::string("tuttiCommInitRank failed: ") + tuttiGetErrorString(r) + ": " +
           tuttiGetLastError(nullptr);
  return "";
}

}  // namespace tutti_test
