// Device buffers on a real GPU, skipped (with the reason) where there is
// none: every collective, dtype and op in place and out of place for 1, 2, 4
// and 8 ranks, all sharing device 0 (NCCL refuses that; tutti allows it),
// checked element by element against the host reference.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "src/device/cuda_api.h"
#include "tests/collectives/collective_cases.h"
#include "tests/device/as_torch_calls.h"
#include "tests/device/gpu_probe.h"
#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

// Copies go on the case's own non-blocking stream: a cudaMemcpy on the
// legacy default stream would wait for every blocking stream of the
// context, and with ranks as threads one of those is another rank's, held
// by its gate until this rank makes its next call (a deadlock NCCL
// programs meet the same way).
class CudaCaseDevice final : public CaseDevice {
 public:
  CudaCaseDevice() { cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); }
  ~CudaCaseDevice() override {
    for (auto& b : buffers_)
      if (b.p) cudaFree(b.p);
    cudaStreamDestroy(stream_);
  }
  void* buffer(int which, size_t bytes) override {
    Buffer& b = buffers_[which];
    if (b.bytes < bytes) {
      if (b.p) cudaFree(b.p);
      b = {};
      if (cudaMalloc(&b.p, bytes) == cudaSuccess) b.bytes = bytes;
    }
    return b.p;
  }
  void upload(void* dev, const void* host, size_t bytes) override {
    cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream_);
    cudaStreamSynchronize(stream_);
  }
  void download(void* host, const void* dev, size_t bytes) override {
    cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, stream_);
    cudaStreamSynchronize(stream_);
  }
  void* stream() override { return stream_; }
  std::string synchronize() override {
    cudaError_t e = cudaStreamSynchronize(stream_);
    return e == cudaSuccess ? "" : cudaGetErrorString(e);
  }

 private:
  struct Buffer {
    void* p = nullptr;
    size_t bytes = 0;
  };
  cudaStream_t stream_ = nullptr;
  Buffer buffers_[2];
};


// Ranks sharing device 0 go GPU to GPU (CUDA IPC between the rank
// processes) unless TUTTI_P2P_DISABLE stages them through host memory.
class GpuCollectives : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override {
    std::string reason;
    if (!gpuAvailable(&reason)) GTEST_SKIP() << reason;
  }
};

TEST_P(GpuCollectives, EveryCollectiveDtypeOpSharingDevice0) {
  auto body = [](const RankContext& ctx) -> std::string {
    if (cudaSetDevice(0) != cudaSuccess) return "cudaSetDevice(0) failed";
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    int device = -1;
    if (tuttiCommCuDevice(comm, &device) != tuttiSuccess || device != 0)
      return "tuttiCommCuDevice: " + std::to_string(device);
    CudaCaseDevice dev;
    err = runEveryCase(comm, ctx.rank, ctx.nranks, {0, 1, 7, 1031, (1 << 20) + 3}, &dev, 11);
    if (!err.empty()) return err;
    tuttiCommDestroy(comm);
    return "";
  };
  const bool mapped = std::get<1>(GetParam());
  auto env = [mapped](int) {
    // 1 MiB device chunks: the 2^20+3 counts take several. Without P2P the
    // chunks go through shared memory mapped into the GPU.
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "120"},
                                              {"TUTTI_P2P_BUFFSIZE", "8388608"},
                                              {"TUTTI_P2P_DISABLE", mapped ? "1" : "0"}};
  };
  EXPECT_EQ(summarize(runRanks(std::get<0>(GetParam()), body, env, 1200)), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuCollectives,
                         ::testing::Values(std::make_tuple(1, false), std::make_tuple(2, false),
                                           std::make_tuple(4, false), std::make_tuple(8, false),
                                           std::make_tuple(2, true), std::make_tuple(4, true)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" +
                                  (std::get<1>(info.param) ? "shm_mapped" : "p2p");
                         });

// Few counts, for compute-sanitizer, under which kernels run many times
// slower (the full matrix above does not finish in the GPU check's minute):
// every collective, dtype and op at 7 and 1031 elements, 2 rank processes.
TEST(GpuSanitized, EveryCollectiveDtypeOpAtTwoCounts) {
  std::string reason;
  if (!gpuAvailable(&reason)) GTEST_SKIP() << reason;
  auto body = [](const RankContext& ctx) -> std::string {
    if (cudaSetDevice(0) != cudaSuccess) return "cudaSetDevice(0) failed";
    CudaCaseDevice dev;
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    err = runEveryCase(comm, ctx.rank, ctx.nranks, {7, 1031}, &dev, 17);
    tuttiCommDestroy(comm);
    return err;
  };
  EXPECT_EQ(summarize(runRanks(2, body, [](int) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "120"}};
  }, 600)), "");
}

// The same under compute-sanitizer with the ranks as threads of this very
// process: the sanitizer's forked children crashed at once on an H200 (run
// 8, SIGSEGV at a stack address), and a test process that has touched CUDA
// cannot fork ranks for the tests after it, so these run only where
// TUTTI_TEST_IN_PROCESS=1 asks (scripts/gpu/check.sh's sanitizer steps).
std::string everyCaseAsThreadsOfThisProcess(int nranks) {
  setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
  setenv("TUTTI_TIMEOUT", "120", 1);
  return runThreadRanks(nranks, [nranks](int r, const tuttiUniqueId& id) -> std::string {
    if (cudaSetDevice(0) != cudaSuccess) return "cudaSetDevice(0) failed";
    CudaCaseDevice dev;  // buffers before init, as in GpuCollectivesAsThreads
    const size_t most = 2 * 2 * 8 * (1031 + 3) + 64;
    dev.buffer(0, most);
    dev.buffer(1, most);
    tuttiComm_t comm = nullptr;
    if (tuttiCommInitRank(&comm, nranks, id, r) != tuttiSuccess)
      return std::string("init: ") + tuttiGetLastError(nullptr);
    std::string err = runEveryCase(comm, r, nranks, {7, 1031}, &dev, 17);
    tuttiCommDestroy(comm);
    return err;
  });
}

bool inProcessAsked(std::string* reason) {
  if (!gpuAvailable(reason)) return false;
  const char* asked = getenv("TUTTI_TEST_IN_PROCESS");
  if (asked && std::string(asked) == "1") return true;
  *reason = "TUTTI_TEST_IN_PROCESS=1 not set";
  return false;
}

// One rank: a device call's worker and copies alone under the sanitizer.
// With two, each rank's worker waits resident for the other's chunks, and
// under compute-sanitizer the pair made no progress in 25 s (H200 run 9):
// the check runs this one.
TEST(GpuSanitized, EveryCollectiveDtypeOpAtTwoCountsOnOneRankInThisProcess) {
  std::string reason;
  if (!inProcessAsked(&reason)) GTEST_SKIP() << reason;
  EXPECT_EQ(everyCaseAsThreadsOfThisProcess(1), "");
}

TEST(GpuSanitized, EveryCollectiveDtypeOpAtTwoCountsAsThreadsOfThisProcess) {
  std::string reason;
  if (!inProcessAsked(&reason)) GTEST_SKIP() << reason;
  EXPECT_EQ(everyCaseAsThreadsOfThisProcess(2), "");
}

// Ranks as threads of one process, each with its own communicator and
// stream on device 0: their gates and the kernels of several communicators
// share one CUDA context.
class GpuCollectivesAsThreads : public GpuCollectives {};

TEST_P(GpuCollectivesAsThreads, EveryCollectiveDtypeOpSharingDevice0) {
  const int n = std::get<0>(GetParam());
  const bool mapped = std::get<1>(GetParam());
  EXPECT_EQ(inChild([n, mapped]() -> std::string {
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    setenv("TUTTI_TIMEOUT", "120", 1);
    setenv("TUTTI_P2P_DISABLE", mapped ? "1" : "0", 1);
    return runThreadRanks(n, [n](int r, const tuttiUniqueId& id) -> std::string {
      if (cudaSetDevice(0) != cudaSuccess) return "cudaSetDevice(0) failed";
      // Every buffer before init, which returns once every rank has come:
      // CUDA synchronizes the device for cudaMalloc and cudaFree, which
      // would wait for another rank's call queued behind its gate, which
      // waits for this thread.
      CudaCaseDevice dev;
      // runCase's largest: an all-to-all's int64 input and output, and canaries.
      const size_t most = 2 * n * 8 * ((1 << 20) + 3) + 64;
      dev.buffer(0, most);
      dev.buffer(1, most);
      tuttiComm_t comm = nullptr;
      if (tuttiCommInitRank(&comm, n, id, r) != tuttiSuccess) return std::string("init: ") + tuttiGetLastError(nullptr);
      std::string err = runEveryCase(comm, r, n, {0, 1, 1031, (1 << 20) + 3}, &dev, 23);
      tuttiCommDestroy(comm);
      return err;
    });
  }), "");
}

INSTANTIATE_TEST_SUITE_P(Threads, GpuCollectivesAsThreads,
                         ::testing::Values(std::make_tuple(2, false), std::make_tuple(4, false),
                                           std::make_tuple(4, true), std::make_tuple(8, false)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "threads_" +
                                  (std::get<1>(info.param) ? "shm_mapped" : "p2p");
                         });

// As PyTorch calls: each input written by a copy on the legacy default
// stream into a block carved from one larger allocation (the caching
// allocator's), the call in place on the legacy stream itself (the tutti
// backend on torch's default stream) or on a non-blocking side stream that
// waits for it by an event and is waited for the same way (ProcessGroupNCCL),
// and tutti's own settings. Each result read back on the legacy stream.
TEST(GpuAsTorchCalls, InPlaceOnTheLegacyStreamAndOnASideStream) {
  std::string reason;
  if (!gpuAvailable(&reason)) GTEST_SKIP() << reason;
  auto body = [](const RankContext& ctx) -> std::string {
    if (cudaSetDevice(0) != cudaSuccess) return "cudaSetDevice(0) failed";
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    char* pool = nullptr;
    cudaStream_t side = nullptr;
    cudaEvent_t ready = nullptr, done = nullptr;
    if (cudaMalloc(&pool, 16 << 20) != cudaSuccess || cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) ||
        cudaEventCreateWithFlags(&ready, cudaEventDisableTiming) || cudaEventCreateWithFlags(&done, cudaEventDisableTiming))
      return "setup";
    for (int onSide = 0; onSide < 2; ++onSide) {
      size_t at = as_torch::kFirstBlock;
      for (size_t n : as_torch::kCounts) {
        const std::string what = std::string(onSide ? "side stream" : "legacy stream") + ", n=" + std::to_string(n);
        float* t = reinterpret_cast<float*>(pool + at);
        at += as_torch::blockBytes(n);
        std::vector<float> in = as_torch::inputs(n, ctx.rank), out(n, -1);
        if (cudaMemcpy(t, in.data(), n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) return what + ": upload";
        cudaStream_t s = nullptr;
        if (onSide) {
          s = side;
          cudaEventRecord(ready, nullptr);
          cudaStreamWaitEvent(side, ready, 0);
        }
        if (tuttiAllReduce(t, t, n, tuttiFloat32, tuttiSum, comm, s) != tuttiSuccess)
          return what + ": " + tuttiGetLastError(comm);
        if (onSide) {
          cudaEventRecord(done, side);
          cudaStreamWaitEvent(nullptr, done, 0);
        }
        if (cudaMemcpy(out.data(), t, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) return what + ": download";
        tuttiResult_t async = tuttiSuccess;
        tuttiCommGetAsyncError(comm, &async);
        if (async != tuttiSuccess) return what + ": async error: " + tuttiGetLastError(comm);
        if (std::string wrong = as_torch::check(out, ctx.nranks, what); !wrong.empty()) return wrong;
      }
    }
    cudaEventDestroy(ready);
    cudaEventDestroy(done);
    cudaStreamDestroy(side);
    cudaFree(pool);
    tuttiCommDestroy(comm);
    return "";
  };
  for (int n : {2, 4}) EXPECT_EQ(summarize(runRanks(n, body, as_torch::env, 60)), "") << n << " ranks";
}

// A process that never touched its GPU (a host-only user on a GPU machine):
// init and host calls make no context, which would take hundreds of MiB of
// device 0 on every rank. The first device call then makes the device side.
TEST(GpuContexts, HostCallsMakeNoContextUntilADeviceCall) {
  std::string reason;
  if (!gpuAvailable(&reason)) GTEST_SKIP() << reason;
  auto body = [](const RankContext& ctx) -> std::string {
    int active = 0;
    const tutti::CudaApi& cu = tutti::realCudaApi();
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    std::vector<int32_t> in(4096, ctx.rank + 1), out(4096, 0);
    if (tuttiAllReduce(in.data(), out.data(), in.size(), tuttiInt32, tuttiSum, comm, nullptr) != tuttiSuccess)
      return std::string("host all-reduce: ") + tuttiGetLastError(comm);
    const int32_t want = ctx.nranks * (ctx.nranks + 1) / 2;
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] != want) return "host element " + std::to_string(i) + " is " + std::to_string(out[i]);
    if (cu.primaryContextActive(0, &active) != cudaSuccess) return "cuDevicePrimaryCtxGetState failed";
    if (active) return "init and a host all-reduce made a context on device 0";
    CudaCaseDevice dev;  // the user's first device work
    err = runEveryCase(comm, ctx.rank, ctx.nranks, {1, 1031}, &dev, 13);
    if (!err.empty()) return "device calls after host calls: " + err;
    tuttiCommDestroy(comm);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(2, body, [](int) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "120"}};
  }, 600)), "");
}

}  // namespace
}  // namespace tutti_test
