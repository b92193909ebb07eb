// Device buffers on an emulated device (src/device/emulated_device.h), so the
// stream-ordered paths run here without a GPU: every collective, dtype and op
// in place and out of place, over P2P (IPC between processes, plain pointers
// within one) and over shared memory and sockets whose slots are mapped into
// the device, and both in one communicator (two pretend nodes), cut into many
// chunks, with no reduction or copy ever done by the host; the call returning before its stream gets
// there and later stream work seeing the result; ranks of one process sharing
// a device and a stream, or on two devices with and without peer access; a
// dead peer; and the refusals.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "src/device/device_reducer.h"
#include "transport/stream_ordered.h"
#include "tests/collectives/collective_cases.h"
#include "tests/device/as_torch_calls.h"
#include "tests/harness/emulated_case_device.h"
#include "tests/harness/ranks.h"
#include "tests/harness/reference.h"
#ifdef TUTTI_HAVE_CUDA
#include "tests/harness/emulated_cuda.h"
#endif

namespace tutti_test {
namespace {

// The ways a device buffer travels between ranks.
enum class Path {
  kP2p,        // one node, devices reach each other: GPU to GPU (IPC between processes)
  kP2pTree,    // the same with TUTTI_ALGO=tree (tree reduce keeps partial sums on the device)
  kShm,        // TUTTI_P2P_DISABLE: shared memory, its slots mapped into the device
  kSocket,     // and TCP (TUTTI_SHM_DISABLE too)
  kTwoNodes,   // two pretend nodes of two ranks: P2P inside each, TCP between
};

const char* pathName(Path path) {
  switch (path) {
    case Path::kP2p: return "p2p";
    case Path::kP2pTree: return "p2p_tree";
    case Path::kShm: return "shm_mapped";
    case Path::kSocket: return "socket_mapped";
    case Path::kTwoNodes: return "two_nodes";
  }
  return "?";
}

bool usesP2p(Path path) { return path == Path::kP2p || path == Path::kP2pTree || path == Path::kTwoNodes; }
bool usesMappedHost(Path path) { return path == Path::kShm || path == Path::kSocket || path == Path::kTwoNodes; }

RankEnv deviceEnv(Path path) {
  return [path](int rank) {
    // 32 KiB / 8 slots: 4 KiB device chunks, so a 1031-element int64 buffer is three of them.
    std::map<std::string, std::string> env{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "60"},
                                           {"TUTTI_P2P_BUFFSIZE", "32768"}};
    if (path == Path::kP2pTree) env["TUTTI_ALGO"] = "tree";
    if (!usesP2p(path)) env["TUTTI_P2P_DISABLE"] = "1";
    if (path == Path::kSocket) env["TUTTI_SHM_DISABLE"] = "1";
    if (path == Path::kTwoNodes) env["TUTTI_HOSTID"] = "node" + std::to_string(rank / 2);
    return env;
  };
}

Route routeOf(Path path) { return {usesP2p(path), usesMappedHost(path)}; }

std::string runMatrix(const RankContext& ctx, Path path, const std::vector<size_t>& counts) {
  processDevice();  // installed before tutti looks for a device
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  const Tally before = Tally::now();  // init takes the gates' page-locked word
  EmulatedCaseDevice dev(processDevice());
  err = runEveryCase(comm, ctx.rank, ctx.nranks, counts, &dev, 1);
  if (!err.empty()) return err;
  tuttiCommDestroy(comm);
  return checkRoute(routeOf(path), ctx.nranks, before);
}

class DeviceMatrix : public ::testing::TestWithParam<std::tuple<int, Path>> {};

TEST_P(DeviceMatrix, EveryCollectiveDtypeOpInAndOutOfPlace) {
  const int n = std::get<0>(GetParam());
  const Path path = std::get<1>(GetParam());
  auto body = [path](const RankContext& ctx) { return runMatrix(ctx, path, {0, 1, 7, 1031}); };
  EXPECT_EQ(summarize(runRanks(n, body, deviceEnv(path))), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceMatrix,
                         ::testing::Values(std::make_tuple(1, Path::kP2p), std::make_tuple(2, Path::kP2p),
                                           std::make_tuple(3, Path::kP2p), std::make_tuple(5, Path::kP2p),
                                           std::make_tuple(3, Path::kP2pTree), std::make_tuple(5, Path::kP2pTree),
                                           std::make_tuple(2, Path::kShm),
                                           std::make_tuple(3, Path::kShm),
                                           std::make_tuple(3, Path::kSocket),
                                           std::make_tuple(4, Path::kTwoNodes)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" +
                                  pathName(std::get<1>(info.param));
                         });

// Large calls (64 MiB): many chunks in flight, every slot of every connection reused.
class DeviceLarge : public ::testing::TestWithParam<Path> {};

TEST_P(DeviceLarge, AllReduceAllGatherReduceScatterPipelined) {
  const Path path = GetParam();
  auto body = [path](const RankContext& ctx) -> std::string {
    processDevice();  // installed before tutti looks for a device
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    const Tally before = Tally::now();  // init takes the gates' page-locked word
    EmulatedCaseDevice dev(processDevice());
    err = runLargeCases(comm, ctx.rank, ctx.nranks, &dev);
    if (!err.empty()) return err;
    tuttiCommDestroy(comm);
    return checkRoute(routeOf(path), ctx.nranks, before);
  };
  RankEnv env = [path](int rank) {
    auto e = deviceEnv(path)(rank);
    e["TUTTI_P2P_BUFFSIZE"] = "262144";
    return e;
  };
  EXPECT_EQ(summarize(runRanks(path == Path::kTwoNodes ? 4 : 3, body, env)), "");
}

INSTANTIATE_TEST_SUITE_P(Paths, DeviceLarge, ::testing::Values(Path::kP2p, Path::kShm, Path::kSocket, Path::kTwoNodes),
                         [](const auto& info) { return std::string(pathName(info.param)); });

// The call returns while its stream is still held; work queued after it on
// the stream sees the result.
TEST(DeviceBuffers, StreamOrdered) {
  auto body = [](const RankContext& ctx) -> std::string {
    FakeDevice& d = processDevice();
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    const size_t count = 5000;
    std::vector<int32_t> host(count, ctx.rank + 1), back(count, -1);
    void* buf = d.alloc(count * 4);
    void* copy = d.alloc(count * 4);
    d.upload(buf, host.data(), count * 4);
    d.upload(copy, back.data(), count * 4);
    tutti::DeviceStream s = *d.createStream();
    d.hold(s);
    auto start = std::chrono::steady_clock::now();
    if (tuttiAllReduce(buf, buf, count, tuttiInt32, tuttiSum, comm, s) != tuttiSuccess)
      return std::string("allreduce: ") + tuttiGetLastError(comm);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 1) return "the call blocked for " + std::to_string(seconds) + " s";
    d.download(back.data(), buf, count * 4);
    if (back[0] != ctx.rank + 1) return "the result arrived before the stream got to the call";
    // Queued after the call: must copy the reduced values.
    if (!d.copyAsync(copy, buf, count * 4, s).ok()) return "copy";
    d.release();
    if (!d.synchronize(s).ok()) return "synchronize";
    d.download(back.data(), copy, count * 4);
    const int32_t want = ctx.nranks * (ctx.nranks + 1) / 2;
    for (size_t i = 0; i < count; ++i)
      if (back[i] != want)
        return "element " + std::to_string(i) + " of the later copy is " + std::to_string(back[i]) +
               ", want " + std::to_string(want);
    if (d.counters().gates < 1) return "no gate ran on the stream";
    int dev = -2;
    if (tuttiCommCuDevice(comm, &dev) != tuttiSuccess || dev != 0)
      return "tuttiCommCuDevice gave " + std::to_string(dev);
    tuttiCommDestroy(comm);
    d.destroyStream(s);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(2, body, deviceEnv(Path::kP2p))), "");
}

// Ranks as threads of one process, each with its own communicator and
// stream, as on a GPU (gpu_test's GpuCollectivesAsThreads). CUDA
// synchronizes the device for frees, so every buffer is made before the
// first call: a free while another rank's call is queued behind its gate
// would wait for that call, which waits for this thread.
class DeviceThreads : public ::testing::TestWithParam<Path> {};

TEST_P(DeviceThreads, EveryCollectiveDtypeOp) {
  const Path path = GetParam();
  auto body = [](const RankContext& ctx) -> std::string {
    FakeDevice& d = processDevice();
    const int n = 3;
    const std::vector<size_t> counts{0, 1, 1031, 70001};
    return runThreadRanks(n, [&](int r, const tuttiUniqueId& id) -> std::string {
      // Made before init, which returns once every rank has come: no
      // rank's call can be queued yet.
      EmulatedCaseDevice dev(d);
      // runCase's largest: an all-to-all's int64 input and output, and canaries.
      const size_t most = 2 * n * 8 * counts.back() + 64;
      dev.buffer(0, most);
      dev.buffer(1, most);
      tuttiComm_t comm = nullptr;
      if (tuttiCommInitRank(&comm, n, id, r) != tuttiSuccess) return std::string("init: ") + tuttiGetLastError(nullptr);
      std::string err = runEveryCase(comm, r, n, counts, &dev, 31 + ctx.rank);
      tuttiCommDestroy(comm);
      return err;
    });
  };
  EXPECT_EQ(summarize(runRanks(1, body, deviceEnv(path), 600)), "");
}

INSTANTIATE_TEST_SUITE_P(Paths, DeviceThreads, ::testing::Values(Path::kP2p, Path::kShm),
                         [](const auto& info) { return pathName(info.param); });

#ifdef TUTTI_HAVE_CUDA
// tutti's CUDA adapter itself (src/device/cuda_runtime.cpp), not the
// emulated device in its place: it runs over the emulated CUDA API, which
// keeps CUDA's rules (tests/harness/emulated_cuda.h), so what the adapter
// gets wrong of them (a "not ready" left for the next launch, an unsafe
// call during a capture) fails here as on a GPU.
class CudaAdapter : public ::testing::TestWithParam<std::tuple<int, Path>> {};

TEST_P(CudaAdapter, EveryCollectiveDtypeOpOverEmulatedCuda) {
  const int n = std::get<0>(GetParam());
  const Path path = std::get<1>(GetParam());
  auto body = [path](const RankContext& ctx) -> std::string {
    FakeDevice& d = processDevice();
    new EmulatedCuda(d);  // the rank's process ends with it
    tutti::setDeviceRuntime(tutti::makeCudaRuntime(EmulatedCuda::api()));
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    const Tally before = Tally::now();
    EmulatedCaseDevice dev(d);
    err = runEveryCase(comm, ctx.rank, ctx.nranks, {0, 1, 7, 1031}, &dev, 1);
    if (!err.empty()) return err;
    tuttiCommDestroy(comm);
    return checkRoute(routeOf(path), ctx.nranks, before);
  };
  EXPECT_EQ(summarize(runRanks(n, body, deviceEnv(path))), "");
}

INSTANTIATE_TEST_SUITE_P(Paths, CudaAdapter,
                         ::testing::Values(std::make_tuple(3, Path::kP2p), std::make_tuple(2, Path::kShm),
                                           std::make_tuple(4, Path::kTwoNodes)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" +
                                  pathName(std::get<1>(info.param));
                         });
#endif

// A process that has not used its device (no context) is a host-only
// user so far: its communicators make no context (each would hold hundreds
// of MiB of device memory on every rank's GPU), and its host calls ask the
// device nothing. Its first device call then makes the device side, and
// every device call after is right.
TEST(DeviceBuffers, NoContextIsMadeUntilADeviceCall) {
  auto body = [](const RankContext& ctx) -> std::string {
    auto* d = new FakeDevice(1);  // not processDevice(), which sets its device
    tutti::setDeviceRuntime(d);
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    const size_t count = 1000;
    std::vector<float> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(i % 5 + ctx.rank);
    if (tuttiAllReduce(in.data(), out.data(), count, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
      return std::string("host all-reduce: ") + tuttiGetLastError(comm);
    for (size_t i = 0; i < count; ++i)
      if (out[i] != static_cast<float>(ctx.nranks * (i % 5)) + ctx.nranks * (ctx.nranks - 1) / 2.0f)
        return "host element " + std::to_string(i) + " is " + std::to_string(out[i]);
    if (d->contextActive(0)) return "init or a host call made a context on the device";
    EmulatedCaseDevice dev(*d);  // the user's first device work: a context now
    err = runEveryCase(comm, ctx.rank, ctx.nranks, {0, 1, 1031}, &dev, 5);
    if (!err.empty()) return "device calls after host calls: " + err;
    tuttiCommDestroy(comm);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(3, body, deviceEnv(Path::kP2p))), "");
}

// As CUDA: a kernel on device 0 reads device 1's memory only after device 0
// enabled peer access to it; copies between devices need none.
TEST(DeviceBuffers, KernelsReachAnotherDeviceOnlyWithPeerAccess) {
  FakeDevice d(2);
  void* theirs = d.alloc(4096, 1);
  void* mine = d.alloc(4096, 0);
  ASSERT_TRUE(d.setDevice(0).ok());
  tutti::DeviceStream s = *d.createStream();
  ASSERT_TRUE(d.loadKernels().ok());
  EXPECT_TRUE(d.copyAsync(mine, theirs, 4096, s).ok());
  tutti::Status st = d.reduceAsync(mine, mine, theirs, 1024, tutti::DataType::kFloat32, tutti::RedOp::kSum, 1, s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("without peer access"), std::string::npos) << st.message();
  ASSERT_TRUE(d.enablePeerAccess(1).ok());
  EXPECT_TRUE(d.reduceAsync(mine, mine, theirs, 1024, tutti::DataType::kFloat32, tutti::RedOp::kSum, 1, s).ok());
  EXPECT_TRUE(d.synchronize(s).ok());
  d.destroyStream(s);
  d.free(mine);
  d.free(theirs);
}

// CUDA IPC as CUDA does it: a handle opened twice in one process maps once
// (reference counted: the first close leaves it usable), and a handle whose
// exporter has exited cannot be opened.
TEST(DeviceBuffers, IpcOpensAreCountedAndNeedTheExporter) {
  EXPECT_EQ(summarize(runRanks(1, [](const RankContext&) -> std::string {
    int toChild[2], toParent[2];
    if (pipe(toChild) != 0 || pipe(toParent) != 0) return "pipe";
    pid_t exporter = fork();
    if (exporter == 0) {  // exports 4 KiB holding 42, then waits to be told to leave
      FakeDevice d(1);
      void* p = d.alloc(4096);
      const int32_t v = 42;
      d.upload(p, &v, 4);
      tutti::DeviceIpcHandle h = *d.exportMemory(p);
      char go;
      _exit(write(toParent[1], &h, sizeof(h)) == sizeof(h) && read(toChild[0], &go, 1) == 1 ? 0 : 1);
    }
    tutti::DeviceIpcHandle h;
    if (read(toParent[0], &h, sizeof(h)) != sizeof(h)) return "no handle";
    FakeDevice d(1);
    void* first = *d.openMemory(h);
    auto second = d.openMemory(h);
    if (!second.ok() || *second != first) return "a second open gave another pointer";
    d.closeMemory(first);
    int32_t v = 0;
    d.download(&v, first, 4);  // still mapped by the second open
    if (v != 42) return "read " + std::to_string(v) + " after one of two closes";
    d.closeMemory(first);
    if (write(toChild[1], "x", 1) != 1) return "pipe";
    int status = 0;
    waitpid(exporter, &status, 0);
    auto late = d.openMemory(h);
    if (late.ok()) return "opened the handle of an exporter that had exited";
    return "";
  })), "");
}

// Slots a NIC writes into device memory (GPUDirect RDMA): the NIC's writes
// may still be on their way to the GPU's memory when the completion says
// they landed, so each newly received chunk is flushed before a kernel
// reads it, once. A fake receiving end stands in for the verbs transport.
class NicWrittenSlots final : public tutti::RecvConnection {
 public:
  NicWrittenSlots(void* ring, size_t slotBytes) : ring_(static_cast<char*>(ring)), slotBytes_(slotBytes) {}
  const void* peek(size_t* bytes, uint32_t ahead) override {
    if (next_ + ahead >= arrived) return nullptr;
    *bytes = slotBytes_;
    return ring_ + ((next_ + ahead) % 4) * slotBytes_;
  }
  tutti::Status release() override { ++next_; return tutti::Status::Ok(); }
  tutti::Status progress() override { return tutti::Status::Ok(); }
  tutti::Status checkPeer() override { return tutti::Status::Ok(); }
  void notifyFailure(int) override {}
  int reportedFailure() const override { return -1; }
  tutti::SlotRegion slots() const override { return {ring_, 4 * slotBytes_, true, true}; }
  uint64_t arrived = 0;  // chunks "the NIC" has delivered

 private:
  char* ring_;
  size_t slotBytes_;
  uint64_t next_ = 0;
};

TEST(DeviceBuffers, ChunksANicWroteAreFlushedBeforeKernelsReadThem) {
  FakeDevice d(1);
  void* ring = d.alloc(4 * 4096);
  tutti::DeviceStream s = *d.createStream();
  auto inner = std::make_unique<NicWrittenSlots>(ring, 4096);
  NicWrittenSlots& nic = *inner;
  auto queue = tutti::OpQueue::create(d, s, nullptr);
  ASSERT_TRUE(queue.ok()) << queue.status().message();
  auto slots = tutti::DeviceSlots::map(d, **queue, nic.slots(), 4);
  ASSERT_TRUE(slots.ok()) << slots.status().message();
  tutti::StreamOrderedRecv recv(std::move(inner), std::move(*slots));
  size_t bytes = 0;
  const int before = d.counters().remoteWriteFlushes;
  EXPECT_EQ(recv.peek(&bytes, 0), nullptr);  // nothing arrived: nothing to flush
  EXPECT_EQ(d.counters().remoteWriteFlushes, before);
  nic.arrived = 2;
  ASSERT_NE(recv.peek(&bytes, 0), nullptr);
  ASSERT_NE(recv.peek(&bytes, 0), nullptr);  // the same chunk again: flushed already
  EXPECT_EQ(d.counters().remoteWriteFlushes, before + 1);
  ASSERT_NE(recv.peek(&bytes, 1), nullptr);  // the next one
  EXPECT_EQ(d.counters().remoteWriteFlushes, before + 2);
  ASSERT_TRUE(recv.release().ok());
  ASSERT_NE(recv.peek(&bytes, 0), nullptr);  // that next one, now first: flushed already
  EXPECT_EQ(d.counters().remoteWriteFlushes, before + 2);
  EXPECT_TRUE(d.synchronize(s).ok());
}

// A device call's whole-buffer copy (out of place, one rank) past 2 GiB: it
// was a one-row 2-D copy, which CUDA refuses past a pitch of 2^31 - 1 bytes.
TEST(DeviceBuffers, CopiesPastTheMaximumPitch) {
  FakeDevice d(1);
  const size_t bytes = (size_t{2} << 30) + 24;
  char* src = static_cast<char*>(d.alloc(bytes));
  char* dst = static_cast<char*>(d.alloc(bytes));
  const uint64_t head = 0x1122334455667788ull, tail = 0x99aabbccddeeff00ull;
  d.upload(src, &head, 8);
  d.upload(src + bytes - 8, &tail, 8);
  tutti::DeviceStream s = *d.createStream();
  auto queue = tutti::OpQueue::create(d, s, nullptr);
  ASSERT_TRUE(queue.ok()) << queue.status().message();
  ASSERT_TRUE((*queue)->launchWorker({}).ok());
  tutti::DeviceReducer reducer(**queue);
  reducer.copy(dst, src, bytes);
  ASSERT_TRUE((*queue)->stop().ok());
  ASSERT_TRUE(d.synchronize(s).ok());
  tutti::Status st = reducer.takeError();
  ASSERT_TRUE(st.ok()) << st.message();
  uint64_t gotHead = 0, gotTail = 0;
  d.download(&gotHead, dst, 8);
  d.download(&gotTail, dst + bytes - 8, 8);
  EXPECT_EQ(gotHead, head);
  EXPECT_EQ(gotTail, tail);
  queue->reset();
  d.destroyStream(s);
  d.free(src);
  d.free(dst);
}

// An abort while the worker's queue is full: the stop cannot be posted, so
// the queue is abandoned, and the worker leaves after the ops it was given
// instead of waiting on the device for ever (tutti's stream then drains:
// destroying the communicator waits for it).
TEST(DeviceBuffers, AnAbortWithTheQueueFullLetsTheWorkerGo) {
  FakeDevice d(1);
  ASSERT_TRUE(d.loadKernels().ok());
  tutti::DeviceStream s = *d.createStream();
  std::atomic<bool> abort{false};
  auto queue = tutti::OpQueue::create(d, s, &abort);
  ASSERT_TRUE(queue.ok()) << queue.status().message();
  auto* hold = static_cast<uint32_t*>(*d.allocPinned(4096));
  *hold = 0;
  ASSERT_TRUE(d.waitWordAsync(s, hold, 1).ok());  // the worker starts only once released
  ASSERT_TRUE((*queue)->launchWorker({}).ok());
  char* buf = static_cast<char*>(d.alloc(8192));
  tutti::QueuedOp copy{buf, buf + 4096, nullptr, 4096, static_cast<uint32_t>(tutti::QueuedOpKind::kCopy), 0, 0, 0};
  for (uint32_t i = 0; i < tutti::kOpQueueSlots; ++i) ASSERT_TRUE((*queue)->post(copy).ok());
  abort = true;
  EXPECT_FALSE((*queue)->post(copy).ok());  // full, and aborted: not queued
  EXPECT_FALSE((*queue)->stop().ok());
  __atomic_store_n(hold, 1u, __ATOMIC_RELEASE);
  auto drained = std::async(std::launch::async, [&] { return d.synchronize(s).ok(); });
  ASSERT_EQ(drained.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the worker never left";
  EXPECT_TRUE(drained.get());
  EXPECT_EQ((*queue)->done(), uint64_t{tutti::kOpQueueSlots});  // the ops it was given ran
  queue->reset();
  d.destroyStream(s);
  d.free(buf);
}

// A device that stops taking ops (here a worker whose stream stays held)
// fails the wait for them after the timeout, saying so, instead of holding
// the call's gate for ever; the stop then waits out no second timeout.
TEST(DeviceBuffers, AWorkerThatTakesNoOpsFailsTheWaitAfterTheTimeout) {
  FakeDevice d(1);
  ASSERT_TRUE(d.loadKernels().ok());
  tutti::DeviceStream s = *d.createStream();
  auto queue = tutti::OpQueue::create(d, s, nullptr, 0.5);
  ASSERT_TRUE(queue.ok()) << queue.status().message();
  auto* hold = static_cast<uint32_t*>(*d.allocPinned(4096));
  *hold = 0;
  ASSERT_TRUE(d.waitWordAsync(s, hold, 1).ok());
  ASSERT_TRUE((*queue)->launchWorker({}).ok());
  char* buf = static_cast<char*>(d.alloc(8192));
  ASSERT_TRUE((*queue)->post({buf, buf + 4096, nullptr, 4096, static_cast<uint32_t>(tutti::QueuedOpKind::kCopy), 0, 0, 0}).ok());
  auto drained = std::async(std::launch::async, [&] { return (*queue)->drain(); });
  ASSERT_EQ(drained.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the wait has no bound";
  const tutti::Status st = drained.get();
  EXPECT_EQ(st.code(), tutti::Code::kTimeout) << st.message();
  EXPECT_NE(st.message().find("finished 0 of 1 ops"), std::string::npos) << st.message();
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ((*queue)->stop().code(), tutti::Code::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(400));
  __atomic_store_n(hold, 1u, __ATOMIC_RELEASE);  // the worker runs, sees the queue abandoned, leaves
  EXPECT_TRUE(d.synchronize(s).ok());
  queue->reset();
  d.destroyStream(s);
  d.free(buf);
}

// Four ranks in one process sharing device 0 and one stream, in a group.
TEST(DeviceBuffers, InitAllRanksShareOneDeviceAndStream) {
  auto body = [](const RankContext& ctx) -> std::string {
    if (ctx.rank != 0) return "";
    FakeDevice& d = processDevice();
    const int n = 4;
    const int devlist[n] = {0, 0, 0, 0};
    tuttiComm_t comms[n];
    if (tuttiCommInitAll(comms, n, devlist) != tuttiSuccess)
      return std::string("init all: ") + tuttiGetLastError(nullptr);
    const size_t count = 3001;
    tutti::DeviceStream s = *d.createStream();
    std::vector<void*> bufs(n);
    for (int r = 0; r < n; ++r) {
      std::vector<float> h(count, static_cast<float>(r));
      bufs[r] = d.alloc(count * 4);
      d.upload(bufs[r], h.data(), count * 4);
    }
    tuttiGroupStart();
    for (int r = 0; r < n; ++r) tuttiAllReduce(bufs[r], bufs[r], count, tuttiFloat32, tuttiSum, comms[r], s);
    if (tuttiGroupEnd() != tuttiSuccess) return std::string("group: ") + tuttiGetLastError(nullptr);
    if (!d.synchronize(s).ok()) return "synchronize";
    for (int r = 0; r < n; ++r) {
      std::vector<float> h(count);
      d.download(h.data(), bufs[r], count * 4);
      for (size_t i = 0; i < count; ++i)
        if (h[i] != 6.0f) return "rank " + std::to_string(r) + " element " + std::to_string(i) + " is " + std::to_string(h[i]);
      int dev = -1;
      tuttiCommCuDevice(comms[r], &dev);
      if (dev != 0) return "rank " + std::to_string(r) + " is on device " + std::to_string(dev);
    }
    for (int r = 0; r < n; ++r) tuttiCommDestroy(comms[r]);
    int bad[1] = {5};
    tuttiComm_t one;
    if (tuttiCommInitAll(&one, 1, bad) != tuttiInvalidArgument) return "devlist {5} accepted";
    if (std::string(tuttiGetLastError(nullptr)).find("devlist[0] is 5 but 2 CUDA devices") == std::string::npos)
      return std::string("devlist message: ") + tuttiGetLastError(nullptr);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(1, body, deviceEnv(Path::kP2p))), "");
}

// Two ranks of one process on devices 0 and 1: with peer access they go GPU
// to GPU through plain pointers (no IPC within a process); without it over
// shared memory, its slots mapped into both devices.
class TwoDevices : public ::testing::TestWithParam<bool> {};

TEST_P(TwoDevices, InitAllReduceAndGather) {
  const bool peerAccess = GetParam();
  auto body = [peerAccess](const RankContext& ctx) -> std::string {
    if (ctx.rank != 0) return "";
    FakeDevice& d = processDevice();
    d.setPeerAccess(peerAccess);
    const int n = 2;
    const int devlist[n] = {0, 1};
    tuttiComm_t comms[n];
    if (tuttiCommInitAll(comms, n, devlist) != tuttiSuccess)
      return std::string("init all: ") + tuttiGetLastError(nullptr);
    const Tally before = Tally::now();  // init takes the gates' page-locked word
    const size_t count = 10007;
    auto value = [](int r, size_t i) { return static_cast<int32_t>((r + 1) * (i % 977)); };
    std::vector<void*> sum(n), part(n), gathered(n);
    std::vector<tutti::DeviceStream> streams(n);
    for (int r = 0; r < n; ++r) {
      std::vector<int32_t> h(count);
      for (size_t i = 0; i < count; ++i) h[i] = value(r, i);
      sum[r] = d.alloc(count * 4, r);
      part[r] = d.alloc(count * 4, r);
      gathered[r] = d.alloc(n * count * 4, r);
      d.upload(sum[r], h.data(), count * 4);
      d.upload(part[r], h.data(), count * 4);
      // Each rank's stream on its own device, as CUDA needs; the last
      // device stays current, so the group runs with device 1 current.
      if (!d.setDevice(r).ok()) return "setDevice";
      streams[r] = *d.createStream();
    }
    tuttiGroupStart();
    for (int r = 0; r < n; ++r) {
      tuttiAllReduce(sum[r], sum[r], count, tuttiInt32, tuttiSum, comms[r], streams[r]);
      tuttiAllGather(part[r], gathered[r], count, tuttiInt32, comms[r], streams[r]);
    }
    if (tuttiGroupEnd() != tuttiSuccess) return std::string("group: ") + tuttiGetLastError(nullptr);
    for (int r = 0; r < n; ++r) {
      if (!d.synchronize(streams[r]).ok()) return "synchronize";
      std::vector<int32_t> got(count), all(n * count);
      d.download(got.data(), sum[r], count * 4);
      d.download(all.data(), gathered[r], n * count * 4);
      for (size_t i = 0; i < count; ++i) {
        if (got[i] != value(0, i) + value(1, i))
          return "rank " + std::to_string(r) + " sum element " + std::to_string(i) + " is " + std::to_string(got[i]);
        for (int q = 0; q < n; ++q)
          if (all[q * count + i] != value(q, i))
            return "rank " + std::to_string(r) + " gathered row " + std::to_string(q) + " element " +
                   std::to_string(i) + " is " + std::to_string(all[q * count + i]);
      }
    }
    for (int r = 0; r < n; ++r) tuttiCommDestroy(comms[r]);
    const Tally after = Tally::now();
    if (after.hostReducer != before.hostReducer) return "the host reducer ran during device calls";
    const long peer = after.device.peerOps - before.device.peerOps;
    const long mapped = after.device.mappedHostOps - before.device.mappedHostOps;
    if (peerAccess && (mapped > 0 || peer == 0 || after.device.ipcOpens != before.device.ipcOpens))
      return "peers in one process did not go GPU to GPU";
    if (!peerAccess && (peer > 0 || mapped == 0)) return "devices without peer access did not use mapped shared memory";
    return "";
  };
  EXPECT_EQ(summarize(runRanks(1, body, deviceEnv(Path::kP2p))), "");
}

INSTANTIATE_TEST_SUITE_P(PeerAccess, TwoDevices, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "p2p" : "shm_mapped"); });

// What a GPU does not forgive. A float buffer at an odd address makes a
// kernel fault with a sticky error that ends the process's context: refused
// at the call instead, naming the buffer, and the device goes on working.
// A stream being captured into a graph: refused, since the call's gate could
// not open on a replay.
TEST(DeviceBuffers, MisalignedBuffersAndCaptureAreRefused) {
  auto body = [](const RankContext& ctx) -> std::string {
    FakeDevice& d = processDevice();
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    const size_t count = 1000;
    char* buf = static_cast<char*>(d.alloc(count * 4 + 64));
    tutti::DeviceStream s = *d.createStream();
    auto says = [comm](const char* what) { return std::string(tuttiGetLastError(comm)).find(what) != std::string::npos; };
    if (tuttiAllReduce(buf + 2, buf + 2, count, tuttiFloat32, tuttiSum, comm, s) != tuttiInvalidArgument ||
        !says("sendbuff") || !says("aligned"))
      return std::string("misaligned: ") + tuttiGetLastError(comm);
    if (tuttiAllGather(buf, buf + 4 + 1, 1, tuttiInt32, comm, s) != tuttiInvalidArgument || !says("recvbuff"))
      return std::string("misaligned recvbuff: ") + tuttiGetLastError(comm);
    d.beginCapture(s);
    if (tuttiAllReduce(buf, buf, count, tuttiFloat32, tuttiSum, comm, s) != tuttiInvalidUsage ||
        !says("captured into a CUDA graph"))
      return std::string("capture: ") + tuttiGetLastError(comm);
    if (!d.endCapture(s).empty()) return "the refused call left work in the capture";
    // The device still works: an aligned call, every element checked.
    std::vector<float> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(i % 7 + ctx.rank);
    d.upload(buf + 4, in.data(), count * 4);
    if (tuttiAllReduce(buf + 4, buf + 4, count, tuttiFloat32, tuttiSum, comm, s) != tuttiSuccess)
      return std::string("aligned: ") + tuttiGetLastError(comm);
    if (!d.synchronize(s).ok()) return "synchronize";
    tuttiResult_t async = tuttiSuccess;
    tuttiCommGetAsyncError(comm, &async);
    if (async != tuttiSuccess) return std::string("async error: ") + tuttiGetLastError(comm);
    d.download(out.data(), buf + 4, count * 4);
    for (size_t i = 0; i < count; ++i)
      if (out[i] != static_cast<float>(2 * (i % 7) + 1))
        return "element " + std::to_string(i) + " is " + std::to_string(out[i]);
    tuttiCommDestroy(comm);
    d.destroyStream(s);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(2, body, deviceEnv(Path::kP2p))), "");
}

// CUDA does not survive fork: in a child of a process that used the device,
// making a device communicator fails, saying why; the parent goes on.
TEST(DeviceBuffers, AChildForkedAfterTheDeviceWasUsedCannotUseIt) {
  auto body = [](const RankContext&) -> std::string {
    FakeDevice& d = processDevice();
    void* used = d.alloc(4096);
    pid_t child = fork();
    if (child == 0) {
      tuttiUniqueId id;
      tuttiComm_t comm = nullptr;
      bool refused = tuttiGetUniqueId(&id) == tuttiSuccess && tuttiCommInitRank(&comm, 1, id, 0) != tuttiSuccess &&
                     std::string(tuttiGetLastError(nullptr)).find("forked") != std::string::npos;
      _exit(refused ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "the forked child made a device communicator";
    tuttiUniqueId id;
    tuttiComm_t comm = nullptr;
    if (tuttiGetUniqueId(&id) != tuttiSuccess || tuttiCommInitRank(&comm, 1, id, 0) != tuttiSuccess)
      return std::string("the parent: ") + tuttiGetLastError(nullptr);
    int device = -1;
    if (tuttiCommCuDevice(comm, &device) != tuttiSuccess || device != 0) return "the parent's communicator is not on device 0";
    tuttiCommDestroy(comm);
    d.free(used);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(1, body, deviceEnv(Path::kP2p))), "");
}

// A call's time counts from when its inputs are ready on the caller's
// stream, not from the call: both ranks' streams are busy for 3 s before
// their all-reduce (a gate held on each), longer than TUTTI_TIMEOUT.
TEST(DeviceBuffers, ACallsTimeCountsFromItsInputs) {
  auto body = [](const RankContext& ctx) -> std::string {
    FakeDevice& d = processDevice();
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    const size_t count = 50000;
    auto* buf = static_cast<float*>(d.alloc(count * 4));
    std::vector<float> in(count, static_cast<float>(ctx.rank + 1)), out(count);
    d.upload(buf, in.data(), count * 4);
    tutti::DeviceStream s = *d.createStream();
    auto* busy = static_cast<uint32_t*>(*d.allocPinned(4096));
    *busy = 0;
    if (!d.waitWordAsync(s, busy, 1).ok()) return "holding the stream";
    if (tuttiAllReduce(buf, buf, count, tuttiFloat32, tuttiSum, comm, s) != tuttiSuccess)
      return std::string("enqueue: ") + tuttiGetLastError(comm);
    std::this_thread::sleep_for(std::chrono::seconds(3));
    __atomic_store_n(busy, 1u, __ATOMIC_RELEASE);
    if (!d.synchronize(s).ok()) return "synchronize";
    tuttiResult_t async = tuttiSuccess;
    tuttiCommGetAsyncError(comm, &async);
    if (async != tuttiSuccess) return std::string("async error: ") + tuttiGetLastError(comm);
    d.download(out.data(), buf, count * 4);
    for (size_t i = 0; i < count; ++i)
      if (out[i] != 3.0f) return "element " + std::to_string(i) + " is " + std::to_string(out[i]) + ", not 3";
    tuttiCommDestroy(comm);
    return "";
  };
  auto env = [](int rank) {
    auto e = deviceEnv(Path::kP2p)(rank);
    e["TUTTI_TIMEOUT"] = "1";
    return e;
  };
  EXPECT_EQ(summarize(runRanks(2, body, env)), "");
}

// A peer that leaves: the stream is released, and the failure is the
// communicator's async error, naming the peer.
class DeadPeer : public ::testing::TestWithParam<Path> {};

TEST_P(DeadPeer, OpensTheGateAndSetsTheAsyncError) {
  auto body = [](const RankContext& ctx) -> std::string {
    FakeDevice& d = processDevice();
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    if (ctx.rank == 1) _exit(0);  // gone without a word
    const size_t count = 100000;
    void* buf = d.alloc(count * 4);
    tutti::DeviceStream s = *d.createStream();
    if (tuttiAllReduce(buf, buf, count, tuttiFloat32, tuttiSum, comm, s) != tuttiSuccess)
      return std::string("enqueue: ") + tuttiGetLastError(comm);
    if (!d.synchronize(s).ok()) return "synchronize";  // returns: the gate opened
    tuttiResult_t async = tuttiSuccess;
    tuttiCommGetAsyncError(comm, &async);
    if (async == tuttiSuccess) return "no async error after the peer died";
    if (std::string(tuttiGetLastError(comm)).find("rank 1") == std::string::npos)
      return std::string("the error does not name rank 1: ") + tuttiGetLastError(comm);
    tuttiCommAbort(comm);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(2, body, deviceEnv(GetParam()))), "");
}

INSTANTIATE_TEST_SUITE_P(Paths, DeadPeer, ::testing::Values(Path::kP2p, Path::kShm, Path::kSocket),
                         [](const auto& info) { return std::string(pathName(info.param)); });

bool says(tuttiComm_t comm, const char* text) {
  return std::string(tuttiGetLastError(comm)).find(text) != std::string::npos;
}

TEST(DeviceBuffers, Refusals) {
  auto body = [](const RankContext& ctx) -> std::string {
    // A communicator made while the process had no device is host-only.
    tuttiComm_t hostOnly = nullptr;
    std::string err = initComm(ctx, &hostOnly);
    if (!err.empty()) return err;
    // Then a one-rank communicator on emulated device 0.
    FakeDevice& d = processDevice();
    tuttiComm_t comm = nullptr;
    tuttiUniqueId own;
    if (tuttiGetUniqueId(&own) != tuttiSuccess || tuttiCommInitRank(&comm, 1, own, 0) != tuttiSuccess)
      return std::string("device communicator: ") + tuttiGetLastError(nullptr);
    std::vector<float> host(64, 1.0f);
    void* dev0 = d.alloc(256, 0);
    void* dev1 = d.alloc(256, 1);
    if (tuttiAllReduce(host.data(), dev0, 64, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiInvalidArgument ||
        !says(comm, "sendbuff is host memory but recvbuff is device memory (device 0)"))
      return std::string("mixed kinds: ") + tuttiGetLastError(comm);
    if (tuttiAllReduce(dev1, dev1, 64, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiInvalidUsage ||
        !says(comm, "sendbuff is device memory (device 1) but the communicator serves device 0"))
      return std::string("other device: ") + tuttiGetLastError(comm);
    if (tuttiAllReduce(dev0, dev0, 64, tuttiFloat32, tuttiSum, hostOnly, nullptr) != tuttiInvalidUsage ||
        !says(hostOnly, "this communicator is host-only"))
      return std::string("host-only: ") + tuttiGetLastError(hostOnly);
    int device = 7;
    if (tuttiCommCuDevice(hostOnly, &device) != tuttiInvalidUsage || device != -1)
      return "tuttiCommCuDevice on a host-only communicator";
    // One group may not mix kinds on one communicator.
    tuttiGroupStart();
    tuttiSend(dev0, 64, tuttiFloat32, 0, comm, nullptr);
    tuttiRecv(host.data(), 64, tuttiFloat32, 0, comm, nullptr);
    if (tuttiGroupEnd() != tuttiInvalidUsage ||
        std::string(tuttiGetLastError(nullptr)).find("mixes host and device buffers") == std::string::npos)
      return std::string("mixed group: ") + tuttiGetLastError(nullptr);
    // Host buffers still work on a device communicator.
    if (tuttiAllReduce(host.data(), host.data(), 64, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess ||
        host[0] != 1.0f)
      return std::string("host buffers: ") + tuttiGetLastError(comm);
    tuttiCommDestroy(comm);
    tuttiCommDestroy(hostOnly);
    return "";
  };
  EXPECT_EQ(summarize(runRanks(2, body, deviceEnv(Path::kP2p))), "");
}

}  // namespace
}  // namespace tutti_test

#ifdef TUTTI_HAVE_CUDA
namespace tutti_test {
namespace {

// As PyTorch calls (GpuAsTorchCalls in tests/device/gpu_collectives_test.cpp
// on a GPU), over the emulated CUDA API: in place, blocks at offsets inside
// one allocation, on the default stream and on a side stream, tutti's own
// settings, and each result read back at once by a copy to pageable memory,
// which waits behind the gate (torch's .cpu()). While it waits, CUDA holds
// up other threads' event creation and destruction, and kernel launches
// when the copy is on the legacy stream: the thread that runs the
// collective must make none of those calls (it did: ranks hung on an H200).
TEST(DeviceBuffers, InPlaceOnTheDefaultStreamAndASideStreamAsTorchCalls) {
  auto body = [](const RankContext& ctx) -> std::string {
    FakeDevice& d = processDevice();
    new EmulatedCuda(d);  // the rank's process ends with it
    tutti::setDeviceRuntime(tutti::makeCudaRuntime(EmulatedCuda::api()));
    const tutti::CudaApi& cu = EmulatedCuda::api();
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    char* pool = static_cast<char*>(d.alloc(16 << 20));
    tutti::DeviceStream side = *d.createStream();
    for (int onSide = 0; onSide < 2; ++onSide) {
      size_t at = as_torch::kFirstBlock;
      for (size_t n : as_torch::kCounts) {
        const std::string what = std::string(onSide ? "side stream" : "default stream") + ", n=" + std::to_string(n);
        float* t = reinterpret_cast<float*>(pool + at);
        at += as_torch::blockBytes(n);
        std::vector<float> in = as_torch::inputs(n, ctx.rank), out(n, -1);
        auto s = static_cast<cudaStream_t>(onSide ? side : nullptr);
        if (cu.memcpyAsync(t, in.data(), n * sizeof(float), cudaMemcpyHostToDevice, s) != cudaSuccess)
          return what + ": upload";
        if (tuttiAllReduce(t, t, n, tuttiFloat32, tuttiSum, comm, s) != tuttiSuccess)
          return what + ": " + tuttiGetLastError(comm);
        if (cu.memcpyAsync(out.data(), t, n * sizeof(float), cudaMemcpyDeviceToHost, s) != cudaSuccess)
          return what + ": download";
        if (std::string wrong = as_torch::check(out, ctx.nranks, what); !wrong.empty()) return wrong;
      }
    }
    tuttiCommDestroy(comm);
    return "";
  };
  for (int n : {2, 4}) EXPECT_EQ(summarize(runRanks(n, body, as_torch::env, 60)), "") << n << " ranks";
}

}  // namespace
}  // namespace tutti_test
#endif
