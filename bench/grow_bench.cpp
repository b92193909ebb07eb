// Is a grown communicator as fast as one made from scratch? One host: N rank
// processes make a communicator, one of them is killed, the survivors shrink
// (TUTTI_SHRINK_EXCLUDE_FAILED), and a new process takes the dead rank's
// place through tuttiCommGrow. The same N processes then make a communicator
// from scratch, and float32 sum all-reduces are timed on both, passes
// alternating which goes first. Rank 0 prints a Markdown table: per size the
// median over passes of each one's time per call (the slowest rank's), and
// the grow's time beside a fresh init's.
//
//   grow-bench [--ranks N] [--passes P] [--iters I]
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tutti/tutti.h"

namespace {

using Clock = std::chrono::steady_clock;
double usSince(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

struct Options {
  int ranks = 4, passes = 5, iters = 50;
  std::string dir;  // where ids pass between processes
};

[[noreturn]] void fail(const std::string& what, tuttiComm_t comm) {
  fprintf(stderr, "grow-bench (pid %d): %s: %s\n", getpid(), what.c_str(), tuttiGetLastError(comm));
  _exit(1);
}

void writeId(const std::string& path, const tuttiUniqueId& id) {
  const std::string tmp = path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "wb");
  if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    fprintf(stderr, "grow-bench: cannot write %s\n", path.c_str());
    _exit(1);
  }
}

tuttiUniqueId readId(const std::string& path) {
  tuttiUniqueId id;
  for (int tries = 0; tries < 60000; ++tries) {
    FILE* f = fopen(path.c_str(), "rb");
    const bool got = f && fread(&id, sizeof id, 1, f) == 1;
    if (f) fclose(f);
    if (got) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a grow's time includes this wait
  }
  fprintf(stderr, "grow-bench: no id in %s after 60 s\n", path.c_str());
  _exit(1);
}

// The slowest rank's microseconds per all-reduce of `count` floats.
double timeAllReduce(tuttiComm_t comm, std::vector<float>& buf, size_t count, int iters) {
  for (int i = 0; i < 3; ++i)
    if (tuttiAllReduce(buf.data(), buf.data(), count, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
      fail("warm-up all-reduce", comm);
  double us = 0;
  if (tuttiAllReduce(&us, &us, 1, tuttiFloat64, tuttiMax, comm, nullptr) != tuttiSuccess) fail("lining up", comm);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i)
    if (tuttiAllReduce(buf.data(), buf.data(), count, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
      fail("all-reduce", comm);
  us = usSince(t0) / iters;
  if (tuttiAllReduce(&us, &us, 1, tuttiFloat64, tuttiMax, comm, nullptr) != tuttiSuccess) fail("slowest", comm);
  return us;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Timed on both communicators, then reported by rank 0.
void compare(tuttiComm_t grown, tuttiComm_t fresh, int rank, const Options& o, double growUs, double initUs) {
  const std::vector<size_t> sizes{8, 1 << 10, 64 << 10, 1 << 20, 16 << 20};
  std::vector<float> buf((16 << 20) / sizeof(float), 1.0f);
  std::vector<std::vector<double>> grownUs(sizes.size()), freshUs(sizes.size());
  for (int pass = 0; pass < o.passes; ++pass) {
    for (int side = 0; side < 2; ++side) {
      const bool onGrown = (pass + side) % 2 == 0;
      for (size_t s = 0; s < sizes.size(); ++s) {
        const int iters = std::max(3, sizes[s] >= (1 << 20) ? o.iters / 5 : o.iters);
        (onGrown ? grownUs : freshUs)[s].push_back(
            timeAllReduce(onGrown ? grown : fresh, buf, sizes[s] / sizeof(float), iters));
      }
    }
  }
  double worst[2] = {growUs, initUs};
  tuttiAllReduce(worst, worst, 2, tuttiFloat64, tuttiMax, fresh, nullptr);
  if (rank != 0) return;
  printf("%d ranks on one host, float32 sum, %d passes alternating which goes first; the median pass, "
         "the slowest rank's time per call.\n\n",
         o.ranks, o.passes);
  printf("| bytes | grown (us) | from scratch (us) | grown / from scratch |\n| --- | --- | --- | --- |\n");
  for (size_t s = 0; s < sizes.size(); ++s) {
    const double g = median(grownUs[s]), f = median(freshUs[s]);
    printf("| %zu | %.1f | %.1f | %.2f |\n", sizes[s], g, f, g / f);
  }
  printf("\ntuttiCommGrow from %d to %d ranks: %.1f ms (the slowest rank); tuttiCommInitRank of %d ranks: %.1f ms\n",
         o.ranks - 1, o.ranks, worst[0] / 1000, o.ranks, worst[1] / 1000);
}

// Every process but the victim ends here, in the grown communicator:
// makes one from scratch beside it, and compares them.
void afterGrow(tuttiComm_t grown, const Options& o, double growUs) {
  int rank = -1;
  tuttiCommUserRank(grown, &rank);
  tuttiUniqueId id{};
  if (rank == 0 && tuttiGetUniqueId(&id) != tuttiSuccess) fail("tuttiGetUniqueId", nullptr);
  if (tuttiBroadcast(&id, &id, sizeof id, tuttiUint8, 0, grown, nullptr) != tuttiSuccess) fail("sharing the id", grown);
  tuttiComm_t fresh = nullptr;
  const auto t0 = Clock::now();
  if (tuttiCommInitRank(&fresh, o.ranks, id, rank) != tuttiSuccess) fail("tuttiCommInitRank", nullptr);
  compare(grown, fresh, rank, o, growUs, usSince(t0));
  tuttiCommDestroy(fresh);
  tuttiCommDestroy(grown);
}

void oldRank(int rank, const Options& o) {
  constexpr int kVictim = 1;
  if (rank == 0) {
    tuttiUniqueId id;
    if (tuttiGetUniqueId(&id) != tuttiSuccess) fail("tuttiGetUniqueId", nullptr);
    writeId(o.dir + "/first", id);
  }
  tuttiComm_t comm = nullptr;
  if (tuttiCommInitRank(&comm, o.ranks, readId(o.dir + "/first"), rank) != tuttiSuccess)
    fail("tuttiCommInitRank", nullptr);
  std::vector<float> buf(1024, 1.0f);
  if (tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
    fail("first all-reduce", comm);
  if (rank == kVictim) raise(SIGKILL);
  while (tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, nullptr) == tuttiSuccess) {
  }
  tuttiComm_t shrunk = nullptr, grown = nullptr;
  if (tuttiCommShrink(comm, nullptr, 0, &shrunk, nullptr, TUTTI_SHRINK_EXCLUDE_FAILED) != tuttiSuccess)
    fail("tuttiCommShrink", comm);
  tuttiCommAbort(comm);
  int shrunkRank = -1;
  tuttiCommUserRank(shrunk, &shrunkRank);
  tuttiUniqueId id;
  if (shrunkRank == 0) {
    if (tuttiCommGetUniqueId(shrunk, &id) != tuttiSuccess) fail("tuttiCommGetUniqueId", shrunk);
    writeId(o.dir + "/grow", id);
  }
  const auto t0 = Clock::now();
  if (tuttiCommGrow(shrunk, o.ranks, shrunkRank == 0 ? &id : nullptr, -1, &grown, nullptr) != tuttiSuccess)
    fail("tuttiCommGrow", shrunk);
  const double growUs = usSince(t0);
  tuttiCommDestroy(shrunk);
  afterGrow(grown, o, growUs);
}

void replacement(const Options& o) {
  const tuttiUniqueId id = readId(o.dir + "/grow");
  tuttiComm_t grown = nullptr;
  const auto t0 = Clock::now();
  if (tuttiCommGrow(nullptr, o.ranks, &id, o.ranks - 1, &grown, nullptr) != tuttiSuccess)
    fail("joining by tuttiCommGrow", nullptr);
  afterGrow(grown, o, usSince(t0));
}

Options parse(int argc, char** argv) {
  Options o;
  const option longs[] = {{"ranks", required_argument, nullptr, 'n'},
                          {"passes", required_argument, nullptr, 'p'},
                          {"iters", required_argument, nullptr, 'i'},
                          {nullptr, 0, nullptr, 0}};
  for (int c; (c = getopt_long(argc, argv, "n:p:i:", longs, nullptr)) != -1;) {
    const int v = optarg ? atoi(optarg) : 0;
    if (c == 'n' && v >= 3) o.ranks = v;
    else if (c == 'p' && v >= 1) o.passes = v;
    else if (c == 'i' && v >= 1) o.iters = v;
    else {
      fprintf(stderr, "usage: grow-bench [--ranks N>=3] [--passes P>=1] [--iters I>=1]\n");
      exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  char dir[] = "/tmp/tutti-grow-bench-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("grow-bench: mkdtemp");
    return 1;
  }
  o.dir = dir;
  fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r <= o.ranks; ++r) {  // the last one is the replacement
    const pid_t pid = fork();
    if (pid == 0) {
      if (r < o.ranks) oldRank(r, o);
      else replacement(o);
      fflush(stdout);
      _exit(0);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (int r = 0; r <= o.ranks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    const bool victim = r == 1;
    const bool ok = victim ? WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL : WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
      fprintf(stderr, "grow-bench: process %d ended with status %d\n", r, status);
      failed = 1;
    }
  }
  for (const char* f : {"/first", "/grow"}) unlink((o.dir + f).c_str());
  rmdir(dir);
  return failed;
}
