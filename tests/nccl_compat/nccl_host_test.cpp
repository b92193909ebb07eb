// A program written against NVIDIA's nccl.h, linked against tutti's
// libnccl.so.2: N processes (this one and N-1 forks) run every collective on
// host buffers and check each element against values each rank computes on
// its own; then the config, split, non-blocking, pre-multiplied-sum and
// refused-call paths. Exit status 0 only when every rank passed.
//
// usage: nccl_host_test NRANKS
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int gRank = 0, gSize = 1, gFailures = 0;

#define EXPECT(cond, ...)                                          \
  do {                                                             \
    if (!(cond)) {                                                 \
      std::fprintf(stderr, "rank %d: FAIL %s: ", gRank, #cond);    \
      std::fprintf(stderr, __VA_ARGS__);                           \
      std::fprintf(stderr, "\n");                                  \
      ++gFailures;                                                 \
    }                                                              \
  } while (0)

#define NCCL_OK(call)                                                                         \
  do {                                                                                        \
    ncclResult_t r_ = (call);                                                                 \
    EXPECT(r_ == ncclSuccess, "%s returned %s: %s", #call, ncclGetErrorString(r_),             \
           ncclGetLastError(nullptr));                                                        \
  } while (0)

// Element values are small integers, so every type holds them and every
// sum, product, min and max of them exactly; only avg needs a tolerance.
double inputValue(int rank, size_t i, ncclRedOp_t op) {
  if (op == ncclProd) return 1 + ((rank + i) % 2);  // 1 or 2
  return static_cast<double>((rank * 7 + i * 3) % 11);
}

size_t typeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

void store(void* p, size_t i, ncclDataType_t t, double v) {
  switch (t) {
    case ncclInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case ncclUint8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case ncclInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case ncclUint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case ncclInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case ncclUint64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case ncclFloat16: static_cast<_Float16*>(p)[i] = static_cast<_Float16>(v); break;
    case ncclFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case ncclFloat64: static_cast<double*>(p)[i] = v; break;
    case ncclBfloat16: {  // small integers: the float's top half is exact
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(bits >> 16);
      break;
    }
    default: break;
  }
}

double load(const void* p, size_t i, ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return static_cast<const int8_t*>(p)[i];
    case ncclUint8: return static_cast<const uint8_t*>(p)[i];
    case ncclInt32: return static_cast<const int32_t*>(p)[i];
    case ncclUint32: return static_cast<const uint32_t*>(p)[i];
    case ncclInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case ncclUint64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case ncclFloat16: return static_cast<double>(static_cast<const _Float16*>(p)[i]);
    case ncclFloat32: return static_cast<const float*>(p)[i];
    case ncclFloat64: return static_cast<const double*>(p)[i];
    case ncclBfloat16: {
      uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    default: return NAN;
  }
}

double reduced(size_t i, ncclRedOp_t op, ncclDataType_t t, int nranks) {
  double acc = inputValue(0, i, op);
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(r, i, op);
    if (op == ncclSum || op == ncclAvg) acc += v;
    if (op == ncclProd) acc *= v;
    if (op == ncclMax) acc = std::max(acc, v);
    if (op == ncclMin) acc = std::min(acc, v);
  }
  if (op == ncclAvg) {
    acc /= nranks;
    if (t != ncclFloat16 && t != ncclFloat32 && t != ncclFloat64 && t != ncclBfloat16)
      acc = std::trunc(acc);  // integer avg divides and truncates
  }
  return acc;
}

bool close(double got, double want, ncclDataType_t t) {
  double tol = t == ncclFloat16 || t == ncclBfloat16 ? 1e-2 * std::fabs(want) + 1e-2 : 1e-6;
  return std::fabs(got - want) <= tol;
}

const char* kOpNames[] = {"sum", "prod", "max", "min", "avg"};

void checkReductions(ncclComm_t comm) {
  const size_t sizes[] = {1, 1023, 70001};
  for (int ti = 0; ti < 10; ++ti) {
    auto t = static_cast<ncclDataType_t>(ti);
    size_t es = typeSize(t);
    for (int oi = 0; oi < 5; ++oi) {
      auto op = static_cast<ncclRedOp_t>(oi);
      for (size_t n : sizes) {
        std::vector<char> in(n * gSize * es), out(n * gSize * es);
        for (size_t i = 0; i < n * gSize; ++i) store(in.data(), i, t, inputValue(gRank, i, op));
        NCCL_OK(ncclAllReduce(in.data(), out.data(), n, t, op, comm, nullptr));
        for (size_t i = 0; i < n; ++i)
          if (!close(load(out.data(), i, t), reduced(i, op, t, gSize), t)) {
            EXPECT(false, "allreduce %s type %d x%zu element %zu: %g, want %g", kOpNames[oi], ti, n, i,
                   load(out.data(), i, t), reduced(i, op, t, gSize));
            break;
          }
        int root = gSize - 1;
        NCCL_OK(ncclReduce(in.data(), out.data(), n, t, op, root, comm, nullptr));
        for (size_t i = 0; gRank == root && i < n; ++i)
          if (!close(load(out.data(), i, t), reduced(i, op, t, gSize), t)) {
            EXPECT(false, "reduce %s type %d x%zu element %zu", kOpNames[oi], ti, n, i);
            break;
          }
        NCCL_OK(ncclReduceScatter(in.data(), out.data(), n, t, op, comm, nullptr));
        for (size_t i = 0; i < n; ++i)
          if (!close(load(out.data(), i, t), reduced(gRank * n + i, op, t, gSize), t)) {
            EXPECT(false, "reducescatter %s type %d x%zu element %zu", kOpNames[oi], ti, n, i);
            break;
          }
      }
    }
  }
}

void checkMovement(ncclComm_t comm) {
  const size_t n = 4099;
  std::vector<int32_t> in(n * gSize), out(n * gSize);
  for (size_t i = 0; i < in.size(); ++i) in[i] = gRank * 1000000 + static_cast<int32_t>(i);
  auto from = [](int r, size_t i) { return r * 1000000 + static_cast<int32_t>(i); };

  NCCL_OK(ncclAllGather(in.data(), out.data(), n, ncclInt32, comm, nullptr));
  for (int r = 0; r < gSize; ++r)
    for (size_t i = 0; i < n; ++i)
      if (out[r * n + i] != from(r, i)) { EXPECT(false, "allgather from %d element %zu", r, i); r = gSize; break; }

  std::vector<int32_t> b(in.begin(), in.begin() + n);
  NCCL_OK(ncclBroadcast(b.data(), b.data(), n, ncclInt32, gSize - 1, comm, nullptr));
  for (size_t i = 0; i < n; ++i)
    if (b[i] != from(gSize - 1, i)) { EXPECT(false, "broadcast element %zu", i); break; }
  std::vector<int32_t> c(in.begin(), in.begin() + n);
  NCCL_OK(ncclBcast(c.data(), n, ncclInt32, 0, comm, nullptr));
  for (size_t i = 0; i < n; ++i)
    if (c[i] != from(0, i)) { EXPECT(false, "bcast element %zu", i); break; }

  // Send/recv around the ring, grouped.
  std::vector<int32_t> got(n);
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(in.data(), n, ncclInt32, (gRank + 1) % gSize, comm, nullptr));
  NCCL_OK(ncclRecv(got.data(), n, ncclInt32, (gRank + gSize - 1) % gSize, comm, nullptr));
  NCCL_OK(ncclGroupEnd());
  for (size_t i = 0; i < n; ++i)
    if (got[i] != from((gRank + gSize - 1) % gSize, i)) { EXPECT(false, "send/recv element %zu", i); break; }

  // All-to-all from a group of sends and receives, and NCCL 2.28's own.
  for (int builtIn = 0; builtIn < 2; ++builtIn) {
    std::fill(out.begin(), out.end(), -1);
    if (builtIn) {
      NCCL_OK(ncclAlltoAll(in.data(), out.data(), n, ncclInt32, comm, nullptr));
    } else {
      NCCL_OK(ncclGroupStart());
      for (int p = 0; p < gSize; ++p) {
        NCCL_OK(ncclSend(in.data() + p * n, n, ncclInt32, p, comm, nullptr));
        NCCL_OK(ncclRecv(out.data() + p * n, n, ncclInt32, p, comm, nullptr));
      }
      NCCL_OK(ncclGroupEnd());
    }
    for (int p = 0; p < gSize; ++p)
      for (size_t i = 0; i < n; ++i)
        if (out[p * n + i] != from(p, gRank * n + i)) {
          EXPECT(false, "alltoall (%s) from %d element %zu", builtIn ? "ncclAlltoAll" : "grouped", p, i);
          p = gSize;
          break;
        }
  }

  std::fill(out.begin(), out.end(), -1);
  NCCL_OK(ncclGather(in.data(), out.data(), n, ncclInt32, 0, comm, nullptr));
  for (int r = 0; gRank == 0 && r < gSize; ++r)
    for (size_t i = 0; i < n; ++i)
      if (out[r * n + i] != from(r, i)) { EXPECT(false, "gather from %d element %zu", r, i); r = gSize; break; }
  std::fill(got.begin(), got.end(), -1);
  NCCL_OK(ncclScatter(in.data(), got.data(), n, ncclInt32, gSize - 1, comm, nullptr));
  for (size_t i = 0; i < n; ++i)
    if (got[i] != from(gSize - 1, gRank * n + i)) { EXPECT(false, "scatter element %zu", i); break; }
}

void checkPreMulSum(ncclComm_t comm) {
  const size_t n = 1031;
  std::vector<float> in(n), out(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 13);
  float scalar = static_cast<float>(gRank + 1);
  ncclRedOp_t op;
  NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  EXPECT(op >= ncclNumOps, "custom op %d is below ncclNumOps", static_cast<int>(op));
  scalar = 1000;  // host-immediate: read at creation, not now
  NCCL_OK(ncclAllReduce(in.data(), out.data(), n, ncclFloat32, op, comm, nullptr));
  float factor = gSize * (gSize + 1) / 2.0f;  // sum of every rank's scalar
  for (size_t i = 0; i < n; ++i)
    if (out[i] != factor * in[i]) { EXPECT(false, "premul-sum element %zu: %g, want %g", i, out[i], factor * in[i]); break; }
  NCCL_OK(ncclRedOpDestroy(op, comm));
  EXPECT(ncclAllReduce(in.data(), out.data(), n, ncclFloat32, op, comm, nullptr) == ncclInvalidArgument,
         "a destroyed op was accepted");
}

void checkSplitAndNonBlocking(ncclComm_t world) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "nccl-compat-half";
  ncclComm_t half = nullptr;
  ncclResult_t r = ncclCommSplit(world, gRank % 2, gRank, &half, &config);
  EXPECT(r == ncclSuccess || r == ncclInProgress, "non-blocking split returned %s", ncclGetErrorString(r));
  ncclResult_t state = ncclInProgress;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto poll = [&](ncclComm_t c) {
    state = ncclInProgress;
    while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
      NCCL_OK(ncclCommGetAsyncError(c, &state));
      if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return state;
  };
  EXPECT(poll(world) == ncclSuccess, "parent after split: %s", ncclGetErrorString(state));
  EXPECT(half && poll(half) == ncclSuccess, "the split's init: %s", ncclGetErrorString(state));
  if (!half) return;
  int size = 0, rank = -1;
  NCCL_OK(ncclCommCount(half, &size));
  NCCL_OK(ncclCommUserRank(half, &rank));
  int want = (gSize - gRank % 2 + 1) / 2;
  EXPECT(size == want && rank == gRank / 2, "split rank %d of %d, want %d of %d", rank, size, gRank / 2, want);
  std::vector<int64_t> v(777, gRank);
  r = ncclAllReduce(v.data(), v.data(), v.size(), ncclInt64, ncclSum, half, nullptr);
  EXPECT(r == ncclSuccess || r == ncclInProgress, "non-blocking allreduce returned %s", ncclGetErrorString(r));
  EXPECT(poll(half) == ncclSuccess, "non-blocking allreduce: %s", ncclGetErrorString(state));
  int64_t sum = 0;
  for (int p = gRank % 2; p < gSize; p += 2) sum += p;
  EXPECT(v[0] == sum && v[776] == sum, "split allreduce gave %lld, want %lld", static_cast<long long>(v[0]),
         static_cast<long long>(sum));
  r = ncclCommFinalize(half);
  EXPECT(r == ncclSuccess || r == ncclInProgress, "finalize returned %s", ncclGetErrorString(r));
  EXPECT(poll(half) == ncclSuccess, "finalize: %s", ncclGetErrorString(state));
  NCCL_OK(ncclCommDestroy(half));
}

void checkRefusals(ncclComm_t comm) {
  float x = 1;
  ncclResult_t r = ncclAllReduce(&x, &x, 1, ncclFloat8e4m3, ncclSum, comm, nullptr);
  std::string rankText = "rank " + std::to_string(gRank);
  EXPECT(r == ncclInvalidUsage && std::strstr(ncclGetLastError(comm), "float8") &&
             std::strstr(ncclGetLastError(comm), rankText.c_str()),
         "float8 gave %s: %s", ncclGetErrorString(r), ncclGetLastError(comm));
  r = ncclAllReduce(&x, &x, 1, ncclFloat32, static_cast<ncclRedOp_t>(99), comm, nullptr);
  EXPECT(r == ncclInvalidArgument, "op 99 gave %s", ncclGetErrorString(r));
  r = ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, nullptr, nullptr);
  EXPECT(r == ncclInvalidArgument, "a NULL comm gave %s", ncclGetErrorString(r));
  void* p = &x;
  r = ncclMemAlloc(&p, 64);
  EXPECT(r == ncclInvalidUsage && p == nullptr && std::strstr(ncclGetLastError(nullptr), "ncclMemAlloc") &&
             std::strstr(ncclGetLastError(nullptr), "no device"),
         "ncclMemAlloc gave %s: %s", ncclGetErrorString(r), ncclGetLastError(nullptr));
  r = ncclMemFree(&x);
  EXPECT(r == ncclInvalidArgument && std::strstr(ncclGetLastError(nullptr), "not returned by tuttiMemAlloc"),
         "ncclMemFree of a stack address gave %s", ncclGetErrorString(r));
  ncclComm_t shrunk = comm;
  r = ncclCommShrink(comm, nullptr, 0, &shrunk, nullptr, 0x100);  // tutti's own flag, not NCCL's
  EXPECT(r == ncclInvalidArgument && shrunk == nullptr, "ncclCommShrink with flag 0x100 gave %s",
         ncclGetErrorString(r));
  ncclConfig_t garbage;
  std::memset(&garbage, 0, sizeof garbage);
  ncclComm_t none = nullptr;
  r = ncclCommSplit(comm, 0, 0, &none, &garbage);
  EXPECT(r == ncclInvalidArgument, "an uninitialized config gave %s", ncclGetErrorString(r));
  void* handle = nullptr;
  std::vector<char> buf(4096);
  NCCL_OK(ncclCommRegister(comm, buf.data(), buf.size(), &handle));
  NCCL_OK(ncclCommDeregister(comm, handle));
}

// The last rank leaves (it does not call); the others go on without it,
// renumbered in order. With one rank, nobody is excluded.
void checkShrink(ncclComm_t comm) {
  const int last = gSize - 1;
  if (gSize > 1 && gRank == last) return;
  int excluded[1] = {last};
  ncclComm_t shrunk = nullptr;
  NCCL_OK(ncclCommShrink(comm, excluded, gSize > 1 ? 1 : 0, &shrunk, nullptr, NCCL_SHRINK_DEFAULT));
  if (!shrunk) return;
  const int want = gSize > 1 ? gSize - 1 : 1;
  int size = 0, rank = -1;
  NCCL_OK(ncclCommCount(shrunk, &size));
  NCCL_OK(ncclCommUserRank(shrunk, &rank));
  EXPECT(size == want && rank == gRank, "the shrunk comm says rank %d of %d, want %d of %d", rank, size, gRank, want);
  std::vector<int64_t> v(1031, gRank);
  NCCL_OK(ncclAllReduce(v.data(), v.data(), v.size(), ncclInt64, ncclSum, shrunk, nullptr));
  const int64_t sum = static_cast<int64_t>(want) * (want - 1) / 2;
  EXPECT(v[0] == sum && v[1030] == sum, "the shrunk comm's allreduce gave %lld, want %lld",
         static_cast<long long>(v[0]), static_cast<long long>(sum));
  NCCL_OK(ncclCommDestroy(shrunk));
}

int runRank(const ncclUniqueId& id) {
  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  EXPECT(version >= NCCL_VERSION_CODE, "ncclGetVersion %d is older than nccl.h's %d", version, NCCL_VERSION_CODE);
  ncclComm_t comm = nullptr;
  NCCL_OK(ncclCommInitRank(&comm, gSize, id, gRank));
  if (!comm) return 1;
  int size = 0, rank = -1;
  NCCL_OK(ncclCommCount(comm, &size));
  NCCL_OK(ncclCommUserRank(comm, &rank));
  EXPECT(size == gSize && rank == gRank, "comm says rank %d of %d", rank, size);
  checkReductions(comm);
  checkMovement(comm);
  checkPreMulSum(comm);
  checkSplitAndNonBlocking(comm);
  checkRefusals(comm);
  checkShrink(comm);
  NCCL_OK(ncclCommDestroy(comm));
  if (gFailures == 0) std::printf("rank %d of %d: every check passed\n", gRank, gSize);
  std::fflush(stdout);  // forked ranks leave by _exit
  return gFailures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  gSize = argc > 1 ? std::atoi(argv[1]) : 3;
  if (gSize < 1) return 2;
  setenv("TUTTI_SOCKET_IFNAME", "lo", 0);
  ncclUniqueId id;
  // The id's rendezvous lives in this process (rank 0); fork the others first
  // would lose it, so the id is made before forking and handed down.
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    std::fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  std::vector<pid_t> children;
  for (int r = 1; r < gSize; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      gRank = r;
      _exit(runRank(id));
    }
    children.push_back(pid);
  }
  int status = runRank(id);
  for (pid_t pid : children) {
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) status = 1;
  }
  return status;
}
