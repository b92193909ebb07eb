// tutti-perf: nccl-tests' benchmark for tutti. Same options, table, footer and
// bus-bandwidth formulas; checks every result. Ranks come from a launcher's
// environment, from -np (forked here) and -t (threads per process).
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/perf_args.h"
#include "bench/perf_device.h"
#include "bench/perf_report.h"
#include "bench/perf_values.h"
#include "tutti/tutti.h"

namespace {

#define PERF_CHECK(call)                                                                \
  do {                                                                                  \
    tuttiResult_t r_ = (call);                                                          \
    if (r_ != tuttiSuccess) {                                                           \
      fprintf(stderr, "tutti-perf: %s failed: %s: %s\n", #call, tuttiGetErrorString(r_), \
              tuttiGetLastError(comm));                                                 \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

// Host memory mapped once for the whole run and touched before timing.
char* allocateTouched(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, bytes, MADV_HUGEPAGE);
  memset(p, 0, bytes);
  return static_cast<char*>(p);
}

enum class Coll { kAllReduce, kAllGather, kBroadcast, kReduce, kReduceScatter, kSendRecv, kAllToAll, kBarrier };

Coll parseColl(const std::string& s) {
  if (s == "allgather") return Coll::kAllGather;
  if (s == "broadcast") return Coll::kBroadcast;
  if (s == "reduce") return Coll::kReduce;
  if (s == "reducescatter") return Coll::kReduceScatter;
  if (s == "sendrecv") return Coll::kSendRecv;
  if (s == "alltoall") return Coll::kAllToAll;
  if (s == "barrier") return Coll::kBarrier;
  return Coll::kAllReduce;
}

bool reduces(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter;
}
bool rooted(Coll c) { return c == Coll::kBroadcast || c == Coll::kReduce; }
// Whether a size is split over ranks (count is per rank) or not.
bool perRank(Coll c) {
  return c == Coll::kAllGather || c == Coll::kReduceScatter || c == Coll::kAllToAll;
}

// nccl-tests' bus bandwidth factors.
double busFactor(Coll c, int n) {
  switch (c) {
    case Coll::kAllReduce: return 2.0 * (n - 1) / n;
    case Coll::kAllGather: case Coll::kReduceScatter: case Coll::kAllToAll: return double(n - 1) / n;
    default: return 1;
  }
}

class RankRunner {
 public:
  RankRunner(const PerfArgs& a, tuttiComm_t comm, int rank, int nranks, PerfReport* report)
      : a_(a), comm_(comm), rank_(rank), n_(nranks), report_(report), coll_(parseColl(a.collective)) {}

  int run();

 private:
  // One call's arguments, worked out once before a loop of calls: a small
  // call takes 0.1 us, and the loop's own work (a table lookup, a
  // division) counted against it.
  struct Call {
    tuttiDataType_t type;
    tuttiRedOp_t op;
    size_t count, elementBytes;
    const void* send;
    void* recv;
    void* stream;
    int root;
  };
  Call prepare(tuttiDataType_t t, tuttiRedOp_t op, size_t count, bool inPlace) const;
  // Issues `c` as collective C.
  template <Coll C>
  tuttiResult_t issueAs(const Call& c);
  // Calls loop(issue), where issue() issues `c` once. The choice of the
  // collective is made here, outside a timed loop, so that the loop calls
  // tutti straight, as a peer's benchmark calls its library
  // (bench/peers/mpi_small.cpp): a switch inside cost 40 instructions a call.
  template <class Loop>
  int withIssuer(const Call& c, Loop&& loop);
  tuttiResult_t issue(const Call& c) {
    return static_cast<tuttiResult_t>(withIssuer(c, [](auto once) { return static_cast<int>(once()); }));
  }
  void fillInputs(tuttiDataType_t t, tuttiRedOp_t op, size_t count, bool inPlace);
  long long countWrong(tuttiDataType_t t, tuttiRedOp_t op, size_t count, bool inPlace);
  const void* sendPtr(size_t count, size_t es, bool inPlace) const;
  void* recvPtr(size_t count, size_t es, bool inPlace) const;
  // `model`, when given, gets the cost model's choice for the timed calls.
  int measure(tuttiDataType_t t, tuttiRedOp_t op, size_t count, bool inPlace, PerfResult* out,
              PerfRow* model = nullptr);

  // With -G 1 the calls get the device twins of the host images below; the
  // images are filled and checked on the host and copied across untimed.
  const void* onDevice(const void* hostImage) const;
  void upload();
  void download();
  std::string synchronize() { return a_.device ? dev_.synchronize() : ""; }

  const PerfArgs& a_;
  tuttiComm_t comm_;
  int rank_, n_;
  PerfReport* report_;
  Coll coll_;
  size_t alloc_ = 0;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  PerfDevice dev_;
};

const void* RankRunner::onDevice(const void* hostImage) const {
  const char* p = static_cast<const char*>(hostImage);
  if (!a_.device) return p;
  if (p >= send_ && p < send_ + alloc_) return dev_.send() + (p - send_);
  return dev_.recv() + (p - recv_);
}

void RankRunner::upload() {
  if (!a_.device) return;
  dev_.upload(dev_.send(), send_, alloc_);
  dev_.upload(dev_.recv(), recv_, alloc_);
}

void RankRunner::download() {
  if (a_.device) dev_.download(recv_, dev_.recv(), alloc_);
}

const void* RankRunner::sendPtr(size_t count, size_t es, bool inPlace) const {
  if (!inPlace) return send_;
  if (coll_ == Coll::kAllGather) return recv_ + rank_ * count * es;
  return recv_;
}

void* RankRunner::recvPtr(size_t count, size_t es, bool inPlace) const {
  if (inPlace && coll_ == Coll::kReduceScatter) return recv_ + rank_ * count * es;
  return recv_;
}

RankRunner::Call RankRunner::prepare(tuttiDataType_t t, tuttiRedOp_t op, size_t count, bool inPlace) const {
  const size_t es = typeSize(t);
  return {t,
          op,
          count,
          es,
          onDevice(sendPtr(count, es, inPlace)),
          const_cast<void*>(onDevice(recvPtr(count, es, inPlace))),
          a_.device ? dev_.stream() : nullptr,
          a_.root % n_};
}

template <Coll C>
tuttiResult_t RankRunner::issueAs(const Call& c) {
  const void* s = c.send;
  void* r = c.recv;
  void* stream = c.stream;
  const size_t count = c.count, es = c.elementBytes;
  const tuttiDataType_t t = c.type;
  if constexpr (C == Coll::kAllReduce) return tuttiAllReduce(s, r, count, t, c.op, comm_, stream);
  if constexpr (C == Coll::kAllGather) return tuttiAllGather(s, r, count, t, comm_, stream);
  if constexpr (C == Coll::kBroadcast) return tuttiBroadcast(s, r, count, t, c.root, comm_, stream);
  if constexpr (C == Coll::kReduce) return tuttiReduce(s, r, count, t, c.op, c.root, comm_, stream);
  if constexpr (C == Coll::kReduceScatter) return tuttiReduceScatter(s, r, count, t, c.op, comm_, stream);
  if constexpr (C == Coll::kSendRecv) {
    tuttiGroupStart();
    tuttiSend(s, count, t, (rank_ + 1) % n_, comm_, stream);
    tuttiRecv(r, count, t, (rank_ - 1 + n_) % n_, comm_, stream);
    return tuttiGroupEnd();
  }
  if constexpr (C == Coll::kAllToAll) {
    tuttiGroupStart();
    for (int p = 0; p < n_; ++p) {
      tuttiSend(static_cast<const char*>(s) + p * count * es, count, t, p, comm_, stream);
      tuttiRecv(static_cast<char*>(r) + p * count * es, count, t, p, comm_, stream);
    }
    return tuttiGroupEnd();
  }
  if constexpr (C == Coll::kBarrier) return tuttiBarrier(comm_, stream);
}

template <class Loop>
int RankRunner::withIssuer(const Call& c, Loop&& loop) {
  switch (coll_) {
    case Coll::kAllReduce: return loop([&] { return issueAs<Coll::kAllReduce>(c); });
    case Coll::kAllGather: return loop([&] { return issueAs<Coll::kAllGather>(c); });
    case Coll::kBroadcast: return loop([&] { return issueAs<Coll::kBroadcast>(c); });
    case Coll::kReduce: return loop([&] { return issueAs<Coll::kReduce>(c); });
    case Coll::kReduceScatter: return loop([&] { return issueAs<Coll::kReduceScatter>(c); });
    case Coll::kSendRecv: return loop([&] { return issueAs<Coll::kSendRecv>(c); });
    case Coll::kAllToAll: return loop([&] { return issueAs<Coll::kAllToAll>(c); });
    case Coll::kBarrier: return loop([&] { return issueAs<Coll::kBarrier>(c); });
  }
  return tuttiInternalError;
}

// Input element i of this rank: element index as the collective numbers it.
void RankRunner::fillInputs(tuttiDataType_t t, tuttiRedOp_t op, size_t count, bool inPlace) {
  size_t es = typeSize(t);
  void* s = const_cast<void*>(sendPtr(count, es, inPlace));
  size_t elems = coll_ == Coll::kReduceScatter || coll_ == Coll::kAllToAll ? count * n_ : count;
  for (size_t i = 0; i < elems; ++i) perfStore(s, i, t, perfInput(rank_, i, op));
  upload();
}

long long RankRunner::countWrong(tuttiDataType_t t, tuttiRedOp_t op, size_t count, bool inPlace) {
  size_t es = typeSize(t);
  const void* r = recvPtr(count, es, inPlace);
  int root = a_.root % n_;
  long long wrong = 0;
  auto expectAt = [&](size_t i, double want) {
    if (!perfClose(perfLoad(r, i, t), perfWrap(want, t), t)) ++wrong;
  };
  switch (coll_) {
    case Coll::kAllReduce:
      for (size_t i = 0; i < count; ++i) expectAt(i, perfReduceExpected(n_, i, op, t));
      break;
    case Coll::kReduce:
      if (rank_ == root)
        for (size_t i = 0; i < count; ++i) expectAt(i, perfReduceExpected(n_, i, op, t));
      break;
    case Coll::kReduceScatter:
      for (size_t i = 0; i < count; ++i) expectAt(i, perfReduceExpected(n_, rank_ * count + i, op, t));
      break;
    case Coll::kAllGather:
      for (int p = 0; p < n_; ++p)
        for (size_t i = 0; i < count; ++i) expectAt(p * count + i, perfInput(p, i, op));
      break;
    case Coll::kBroadcast:
      for (size_t i = 0; i < count; ++i) expectAt(i, perfInput(root, i, op));
      break;
    case Coll::kSendRecv:
      for (size_t i = 0; i < count; ++i) expectAt(i, perfInput((rank_ - 1 + n_) % n_, i, op));
      break;
    case Coll::kAllToAll:
      for (int p = 0; p < n_; ++p)
        for (size_t i = 0; i < count; ++i) expectAt(p * count + i, perfInput(p, rank_ * count + i, op));
      break;
    case Coll::kBarrier:  // moves nothing: one row, its time is the barrier's
      break;
  }
  return wrong;
}

int RankRunner::measure(tuttiDataType_t t, tuttiRedOp_t op, size_t count, bool inPlace,
                        PerfResult* out, PerfRow* model) {
  tuttiComm_t comm = comm_;
  fillInputs(t, op, count, inPlace);
  const Call call = prepare(t, op, count, inPlace);
  std::string failed;
  std::chrono::steady_clock::time_point t0, t1;
  tuttiCallChoice_t before{}, after{};  // the cost model's choice, when the timed calls made one
  const int loopFailed = withIssuer(call, [&](auto issueOnce) {
    for (int i = 0; i < a_.warmup; ++i) PERF_CHECK(issueOnce());
    failed = synchronize();
    PERF_CHECK(tuttiBarrier(comm, nullptr));
    PERF_CHECK(tuttiCommLastChoice(comm, &before));
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < a_.iters; ++i) PERF_CHECK(issueOnce());
    if (failed.empty()) failed = synchronize();  // device calls: timed until the stream is done
    t1 = std::chrono::steady_clock::now();
    PERF_CHECK(tuttiCommLastChoice(comm, &after));
    return 0;
  });
  if (loopFailed) return 1;
  if (!failed.empty()) {
    fprintf(stderr, "tutti-perf: rank %d: stream failed: %s\n", rank_, failed.c_str());
    return 1;
  }
  double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / a_.iters;
  // Like nccl-tests: the time is the average over ranks.
  double sumUs = 0;
  PERF_CHECK(tuttiAllReduce(&us, &sumUs, 1, tuttiFloat64, tuttiSum, comm, nullptr));
  out->timeUs = sumUs / n_;
  if (model && after.sequence > before.sequence) {  // device calls and sends make none
    model->algorithm = after.onHostBlock ? "hostblock" : after.algorithm;
    model->nchannels = after.nchannels;
    model->predictedUs = after.predictedUs;
  }
  out->wrong = 0;
  if (a_.check) {
    fillInputs(t, op, count, inPlace);
    PERF_CHECK(issue(prepare(t, op, count, inPlace)));
    if (!synchronize().empty()) return 1;
    download();
    double wrong = static_cast<double>(countWrong(t, op, count, inPlace)), total = 0;
    PERF_CHECK(tuttiAllReduce(&wrong, &total, 1, tuttiFloat64, tuttiSum, comm, nullptr));
    out->wrong = static_cast<long long>(total);
  }
  return 0;
}

int RankRunner::run() {
  size_t alloc = alloc_ = a_.maxBytes + 4096;
  send_ = allocateTouched(alloc);
  recv_ = allocateTouched(alloc);
  if (!send_ || !recv_) {
    fprintf(stderr, "tutti-perf: rank %d cannot allocate %zu bytes\n", rank_, alloc);
    return 1;
  }
  if (a_.device) {
    std::string failed = dev_.allocate(alloc);
    if (!failed.empty()) {
      fprintf(stderr, "tutti-perf: rank %d: %s\n", rank_, failed.c_str());
      return 1;
    }
  }
  std::vector<tuttiRedOp_t> ops = reduces(coll_) ? a_.ops : std::vector<tuttiRedOp_t>{tuttiSum};
  bool inPlaceMeaningful = coll_ != Coll::kSendRecv && coll_ != Coll::kAllToAll && coll_ != Coll::kBarrier;
  for (tuttiDataType_t t : a_.types) {
    size_t es = typeSize(t);
    for (tuttiRedOp_t op : ops) {
      for (size_t size = a_.minBytes; size <= a_.maxBytes;) {
        size_t count = coll_ == Coll::kBarrier ? 0 : perRank(coll_) ? size / (es * n_) : size / es;
        if (count > 0 || size == 0 || coll_ == Coll::kBarrier) {
          PerfRow row;
          row.bytes = perRank(coll_) ? count * es * n_ : count * es;
          row.count = perRank(coll_) ? count * n_ : count;
          row.type = typeName(t);
          row.op = reduces(coll_) ? opName(op) : "none";
          row.root = rooted(coll_) ? a_.root % n_ : -1;
          if (measure(t, op, count, false, &row.outOfPlace, &row)) return 1;
          row.hasInPlace = inPlaceMeaningful;
          if (inPlaceMeaningful && measure(t, op, count, true, &row.inPlace)) return 1;
          double factor = busFactor(coll_, n_);
          row.outOfPlace.fill(row.bytes, factor);
          row.inPlace.fill(row.bytes, factor);
          if (rank_ == 0) report_->addRow(row);
        }
        size_t next = a_.stepFactor > 1 ? static_cast<size_t>(size * a_.stepFactor) : size + a_.stepBytes;
        if (next <= size) next = size + 1;
        size = coll_ == Coll::kBarrier ? a_.maxBytes + 1 : next;
      }
    }
  }
  munmap(send_, alloc);
  munmap(recv_, alloc);
  return 0;
}

// `initMs`: how long this rank's init call took; the header shows the slowest.
int runRank(const PerfArgs& a, tuttiComm_t comm, double initMs, PerfReport* report) {
  int rank = 0, n = 1;
  tuttiCommUserRank(comm, &rank);
  tuttiCommCount(comm, &n);
  double slowest = 0;
  if (tuttiAllReduce(&initMs, &slowest, 1, tuttiFloat64, tuttiMax, comm, nullptr) != tuttiSuccess) {
    fprintf(stderr, "tutti-perf: %s\n", tuttiGetLastError(comm));
    return 1;
  }
  if (rank == 0) report->printHeader(a, n, slowest);
  // Freshly started ranks answer slowly at first (cold code paths, idle
  // cores): settle them before anything is timed (-w 0: not even that).
  for (int i = 0; i < (a.warmup > 0 ? 200 : 0); ++i)
    if (tuttiBarrier(comm, nullptr) != tuttiSuccess) {
      fprintf(stderr, "tutti-perf: warm-up barrier failed: %s\n", tuttiGetLastError(comm));
      return 1;
    }
  RankRunner runner(a, comm, rank, n, report);
  int rc = runner.run();
  if (rank == 0) rc |= report->finish();
  tuttiCommDestroy(comm);
  return rc;
}

// With -G 1, makes the rank's device current before its communicator is made.
bool selectDevice(const PerfArgs& a, int rank) {
  if (!a.device) return true;
  std::string failed = PerfDevice::select(rank);
  if (!failed.empty()) fprintf(stderr, "tutti-perf: rank %d: %s\n", rank, failed.c_str());
  return failed.empty();
}

// The rank among this host's ranks, as launchers say it (for the device).
int localRankFromEnv() {
  for (const char* v : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* s = getenv(v)) return atoi(s);
  return 0;
}

// One process of -np: T threads, ranks firstRank .. firstRank+T-1.
int runProcess(const PerfArgs& a, const tuttiUniqueId& id, int firstRank, int nranks) {
  std::vector<int> rcs(a.threads, 0);
  std::vector<std::thread> threads;
  PerfReport report(a);
  for (int t = 0; t < a.threads; ++t) {
    threads.emplace_back([&, t] {
      if (!selectDevice(a, firstRank + t)) {
        rcs[t] = 1;
        return;
      }
      tuttiComm_t comm = nullptr;
      const auto start = std::chrono::steady_clock::now();
      tuttiResult_t r = tuttiCommInitRank(&comm, nranks, id, firstRank + t);
      const double initMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (r != tuttiSuccess) {
        fprintf(stderr, "tutti-perf: init of rank %d failed: %s\n", firstRank + t, tuttiGetLastError(nullptr));
        rcs[t] = 1;
        return;
      }
      rcs[t] = runRank(a, comm, initMs, &report);
    });
  }
  int rc = 0;
  for (int t = 0; t < a.threads; ++t) {
    threads[t].join();
    rc |= rcs[t];
  }
  return rc;
}

bool launchedByLauncher() {
  const char* vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (const char* v : vars)
    if (getenv(v)) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  PerfArgs a;
  int exitCode = 0;
  if (!parsePerfArgs(argc, argv, &a, &exitCode)) return exitCode;
  // Before tutti first looks for a device (forked ranks inherit it).
  if (a.emulateDevice > 0) setenv("TUTTI_EMULATE_DEVICE", std::to_string(a.emulateDevice).c_str(), 1);

  if (a.processes == 1 && a.threads == 1 && launchedByLauncher()) {
    if (!selectDevice(a, localRankFromEnv())) return 1;
    tuttiComm_t comm = nullptr;
    const auto start = std::chrono::steady_clock::now();
    if (tuttiCommInitFromEnv(&comm) != tuttiSuccess) {
      fprintf(stderr, "tutti-perf: %s\n", tuttiGetLastError(nullptr));
      return 1;
    }
    const double initMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    PerfReport report(a);
    return runRank(a, comm, initMs, &report);
  }

  tuttiUniqueId id;
  if (tuttiGetUniqueId(&id) != tuttiSuccess) {
    fprintf(stderr, "tutti-perf: %s\n", tuttiGetLastError(nullptr));
    return 1;
  }
  int nranks = a.processes * a.threads;
  if (a.processes == 1) return runProcess(a, id, 0, nranks);
  // Every rank starts init when the last is forked: on 2 cores the first
  // would otherwise wait at the rendezvous for the forks (25-30 ms of 8
  // ranks' init, 400 ms of 64's), and the header would time the launch.
  int startGate[2];
  if (pipe(startGate) != 0) {
    perror("pipe");
    return 1;
  }
  std::vector<pid_t> children;
  for (int p = 0; p < a.processes; ++p) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      close(startGate[1]);
      char none;
      while (read(startGate[0], &none, 1) < 0 && errno == EINTR) {
      }  // end of file: the parent has forked every rank
      close(startGate[0]);
      _exit(runProcess(a, id, p * a.threads, nranks));
    }
    if (pid < 0) {
      perror("fork");
      return 1;
    }
    children.push_back(pid);
  }
  close(startGate[0]);
  close(startGate[1]);
  int rc = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  return rc;
}
