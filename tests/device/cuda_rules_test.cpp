// CUDA's rules as tutti meets them, each checked against two CUDAs: a GPU's
// (skipped without one) and the emulation that runs tutti's CUDA adapter
// here (tests/harness/emulated_cuda.h). What the emulation assumes is
// what these tests assert, so a GPU that disagrees shows that the emulation
// is wrong and must follow. Each body runs in a child: CUDA does not
// survive fork.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernels/reducer.h"
#include "src/device/cuda_api.h"
#include "src/device/device_reducer.h"
#include "src/device/device_runtime.h"
#include "src/device/op_queue.h"
#include "tests/device/gpu_probe.h"
#include "tests/harness/emulated_cuda.h"

namespace tutti {
namespace {

using tutti_test::EmulatedCuda;
using tutti_test::FakeDevice;

enum class Cuda { kGpu, kEmulated };

class CudaRules : public ::testing::TestWithParam<Cuda> {
 protected:
  void SetUp() override {
    std::string reason;
    if (GetParam() == Cuda::kGpu && !tutti_test::gpuAvailable(&reason)) GTEST_SKIP() << reason;
  }
  bool gpu() const { return GetParam() == Cuda::kGpu; }

  // The body, in a child, with the CUDA under test and tutti's adapter over it.
  std::string withCuda(const std::function<std::string(const CudaApi&, DeviceRuntime&)>& body) const {
    const Cuda which = GetParam();
    return tutti_test::inChild([&]() -> std::string {
      if (which == Cuda::kGpu) return body(realCudaApi(), *cudaDeviceRuntime());
      FakeDevice device(1);
      EmulatedCuda cuda(device);
      std::unique_ptr<DeviceRuntime> rt(makeCudaRuntime(EmulatedCuda::api()));
      return body(EmulatedCuda::api(), *rt);
    });
  }
};

// A stream held as tutti's gates hold one (a wait on a page-locked word).
struct HeldStream {
  DeviceRuntime& rt;
  DeviceStream stream = nullptr;
  uint32_t* word = nullptr;
  uint32_t ticket = 0;

  std::string make() {
    auto page = rt.allocPinned(4096);
    auto s = rt.createStream();
    if (!page.ok() || !s.ok()) return "a held stream's setup failed";
    word = static_cast<uint32_t*>(*page);
    *word = 0;
    stream = *s;
    return "";
  }
  std::string hold() {
    ticket = __atomic_load_n(word, __ATOMIC_ACQUIRE) + 1;
    Status st = rt.waitWordAsync(stream, word, ticket);
    return st.ok() ? "" : st.message();
  }
  void release() { __atomic_store_n(word, ticket, __ATOMIC_RELEASE); }
};

// Whether `call` is still running 2 s after it started while a gate holds
// a stream of this process; the gate opens then, and the call must end.
std::string waitsForAHeldStream(HeldStream& held, const std::function<void()>& call, bool* waited) {
  std::string err = held.hold();
  if (!err.empty()) return err;
  auto done = std::async(std::launch::async, call);
  *waited = done.wait_for(std::chrono::seconds(2)) != std::future_status::ready;
  held.release();
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) return "the call never ended";
  return held.rt.synchronize(held.stream).ok() ? "" : "the held stream failed";
}

// Frees and kernel loading wait for a held stream; allocations and
// registrations do not (what src/device/emulated_device.cpp assumes).
TEST_P(CudaRules, WhatWaitsForAStreamHeldByAGate) {
  EXPECT_EQ(withCuda([](const CudaApi& cu, DeviceRuntime& rt) -> std::string {
    if (!rt.setDevice(0).ok()) return "setDevice";
    HeldStream held{rt};
    if (std::string err = held.make(); !err.empty()) return err;
    void* device = nullptr;
    void* pinned = nullptr;
    std::vector<char> host(1 << 20);
    struct Case {
      const char* name;
      std::function<void()> call;
      bool waits;
    };
    const std::vector<Case> cases{
        {"loading the kernels (a first launch)", [&] { cu.loadKernels(); }, true},
        {"cudaMalloc", [&] { cu.malloc(&device, 1 << 20); }, false},
        {"cudaFree", [&] { cu.free(device); }, true},
        {"cudaHostAlloc", [&] { cu.hostAlloc(&pinned, 1 << 20, cudaHostAllocPortable); }, false},
        {"cudaFreeHost", [&] { cu.freeHost(pinned); }, true},
        {"cudaHostRegister", [&] { cu.hostRegister(host.data(), host.size(), cudaHostRegisterMapped); }, false},
        {"cudaHostUnregister", [&] { cu.hostUnregister(host.data()); }, true},
    };
    std::string disagree;
    for (const Case& c : cases) {
      bool waited = false;
      std::string err = waitsForAHeldStream(held, c.call, &waited);
      if (!err.empty()) return std::string(c.name) + ": " + err;
      fprintf(stderr, "%s %s for the held stream\n", c.name, waited ? "waited" : "did not wait");
      if (waited != c.waits) disagree += std::string(c.name) + (waited ? " waited; " : " did not wait; ");
    }
    return disagree;
  }), "");
}

// An event query that finds the event not ready answers
// cudaErrorNotReady but leaves no last error: the next launch, whose
// wrapper returns cudaGetLastError, succeeds (the first GPU check, on an
// H200 with CUDA 13, showed the emulation's opposite rule was wrong).
TEST_P(CudaRules, NotReadyIsAnAnswerNotALastError) {
  EXPECT_EQ(withCuda([](const CudaApi& cu, DeviceRuntime& rt) -> std::string {
    if (!rt.setDevice(0).ok() || !rt.loadKernels().ok()) return "setup";
    HeldStream held{rt};
    if (std::string err = held.make(); !err.empty()) return err;
    auto other = rt.createStream();
    auto buffer = rt.allocDevice(4096);
    if (!other.ok() || !buffer.ok()) return "setup";
    cudaEvent_t e = nullptr;
    if (cu.eventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) return "event";
    if (std::string err = held.hold(); !err.empty()) return err;
    if (cu.eventRecord(e, static_cast<cudaStream_t>(held.stream)) != cudaSuccess) return "record";
    std::string out;
    // CUDA's own calls.
    if (cu.eventQuery(e) != cudaErrorNotReady) out += "the held event was not 'not ready'; ";
    if (auto left = static_cast<cudaError_t>(cu.launchCopy(*buffer, static_cast<char*>(*buffer) + 2048, 1024, *other)); left != cudaSuccess)
      out += std::string("a launch after a not-ready query returned ") + cudaGetErrorName(left) + "; ";
    // tutti's adapter.
    auto done = rt.eventDone(static_cast<DeviceEvent>(e));
    if (!done.ok() || *done) out += "eventDone did not say 'not ready'; ";
    Status launched = rt.reduceAsync(*buffer, *buffer, static_cast<char*>(*buffer) + 2048, 256, DataType::kFloat32,
                                     RedOp::kSum, 1, *other);
    if (!launched.ok()) out += "the adapter's launch after eventDone failed: " + launched.message() + "; ";
    held.release();
    if (!rt.synchronize(held.stream).ok() || !rt.synchronize(*other).ok()) out += "synchronize; ";
    cu.eventDestroy(e);
    return out;
  }), "");
}

// Whether work on `s` waits while `held`'s gate is closed: a copy kernel and
// an event after it, still not done 1 s later.
std::string waitsBehind(const CudaApi& cu, HeldStream& held, cudaStream_t s, void* buffer, bool* waited) {
  cudaEvent_t e = nullptr;
  if (cu.eventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) return "event";
  if (std::string err = held.hold(); !err.empty()) return err;
  char* b = static_cast<char*>(buffer);
  if (cu.launchCopy(b, b + 4096, 4096, s) != cudaSuccess || cu.eventRecord(e, s) != cudaSuccess) return "launch";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  cudaError_t r = cudaErrorNotReady;
  while ((r = cu.eventQuery(e)) == cudaErrorNotReady && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  *waited = r == cudaErrorNotReady;
  held.release();
  if (cu.eventSynchronize(e) != cudaSuccess) return "the work never ended";
  cu.eventDestroy(e);
  return held.rt.synchronize(held.stream).ok() ? "" : "the held stream failed";
}

// The legacy default stream (nullptr) and streams made without
// cudaStreamNonBlocking wait for each other; tutti's own streams wait for
// neither, so a caller's gate on the legacy stream never holds tutti's work
// (which must run to open it). A test that copied with cudaMemcpy on the
// legacy stream while another rank's blocking stream was gated deadlocked
// on an H200 (bench/results/gpu.md).
TEST_P(CudaRules, TheLegacyStreamAndBlockingStreamsWaitForEachOtherNotForTuttis) {
  EXPECT_EQ(withCuda([](const CudaApi& cu, DeviceRuntime& rt) -> std::string {
    if (!rt.setDevice(0).ok() || !rt.loadKernels().ok()) return "setup";
    auto buffer = rt.allocDevice(1 << 16);
    auto tuttis = rt.createStream();
    cudaStream_t blocking = nullptr;
    if (!buffer.ok() || !tuttis.ok() || cu.streamCreateWithFlags(&blocking, 0) != cudaSuccess) return "setup";
    HeldStream heldBlocking{rt}, heldLegacy{rt};
    if (std::string err = heldBlocking.make() + heldLegacy.make(); !err.empty()) return err;
    rt.destroyStream(heldBlocking.stream);
    rt.destroyStream(heldLegacy.stream);
    heldBlocking.stream = blocking;
    heldLegacy.stream = nullptr;
    struct Case {
      const char* name;
      HeldStream& held;
      cudaStream_t on;
      bool waits;
    };
    const std::vector<Case> cases{
        {"the legacy stream, behind a held blocking stream,", heldBlocking, nullptr, true},
        {"a blocking stream, behind the held legacy stream,", heldLegacy, blocking, true},
        {"tutti's stream, behind the held legacy stream,", heldLegacy, static_cast<cudaStream_t>(*tuttis), false},
    };
    std::string disagree;
    for (const Case& c : cases) {
      bool waited = false;
      if (std::string err = waitsBehind(cu, c.held, c.on, *buffer, &waited); !err.empty())
        return std::string(c.name) + " " + err;
      fprintf(stderr, "%s %s\n", c.name, waited ? "waited" : "did not wait");
      if (waited != c.waits) disagree += std::string(c.name) + (waited ? " waited; " : " did not wait; ");
    }
    cu.streamDestroy(blocking);
    return disagree;
  }), "");
}

// While a thread copies to pageable memory from a stream a gate holds (as
// torch's .cpu() does right after a collective), which calls of another
// thread wait for that copy: creating and destroying an event do (a rank
// hung in cuEventDestroy on an H200), and when the copy is on the legacy
// stream, as torch's is, so does every kernel launch (ranks hung in
// cuLaunchKernel), any copy and an event's record (an H200, run 8). So the thread that must run
// the collective to open the gate makes no CUDA call: the caller's thread
// launches a worker kernel with the call (kernels/op_queue.h). The
// emulation is built on these rules (tests/harness/emulated_cuda.h).
TEST_P(CudaRules, WhatWaitsWhileAThreadCopiesPageableMemory) {
  EXPECT_EQ(withCuda([](const CudaApi& cu, DeviceRuntime& rt) -> std::string {
    if (!rt.setDevice(0).ok() || !rt.loadKernels().ok()) return "setup";
    HeldStream heldOwn{rt}, heldLegacy{rt};
    if (std::string err = heldOwn.make() + heldLegacy.make(); !err.empty()) return err;
    rt.destroyStream(heldLegacy.stream);
    heldLegacy.stream = nullptr;
    auto other = rt.createStream();
    auto buffer = rt.allocDevice(1 << 20);
    auto pinnedPage = rt.allocPinned(4096);
    cudaEvent_t e = nullptr, created[2] = {nullptr, nullptr}, spare[2] = {nullptr, nullptr};
    if (!other.ok() || !buffer.ok() || !pinnedPage.ok() || cu.eventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess ||
        cu.eventCreateWithFlags(&spare[0], cudaEventDisableTiming) != cudaSuccess ||
        cu.eventCreateWithFlags(&spare[1], cudaEventDisableTiming) != cudaSuccess || cu.eventRecord(e, nullptr) != cudaSuccess ||
        cu.eventSynchronize(e) != cudaSuccess)
      return "setup";
    char* dev = static_cast<char*>(*buffer);
    void* pinned = *pinnedPage;
    const auto o = static_cast<cudaStream_t>(*other);
    std::vector<char> pageable(4096);
    std::string disagree;
    struct Copier {
      const char* name;
      HeldStream& held;
    };
    const Copier copiers[2] = {{"a copy to pageable memory on a stream of its own", heldOwn},
                               {"a copy to pageable memory on the legacy stream", heldLegacy}};
    for (int k = 0; k < 2; ++k) {
      struct Case {
        const char* name;
        std::function<int()> call;
        bool waits;
      };
      const bool legacy = k == 1;
      const std::vector<Case> cases{
          {"cudaMemcpyAsync device to device", [&] { return cu.memcpyAsync(dev, dev + 8192, 4096, cudaMemcpyDeviceToDevice, o); }, legacy},
          {"cudaMemcpyAsync device to page-locked host", [&] { return cu.memcpyAsync(pinned, dev, 4096, cudaMemcpyDeviceToHost, o); }, legacy},
          {"the copy kernel's launch", [&] { return cu.launchCopy(dev, dev + 8192, 4096, o); }, legacy},
          {"the reduce kernel's launch",
           [&] { return cu.launchReduce(dev, dev, dev + 8192, 1024, DataType::kFloat32, RedOp::kSum, 1, o); }, legacy},
          {"cudaEventRecord", [&] { return cu.eventRecord(e, o); }, legacy},
          {"cudaEventQuery", [&] { return cu.eventQuery(e); }, false},
          {"cudaEventSynchronize of a reached event", [&] { return cu.eventSynchronize(e); }, false},
          {"cudaSetDevice", [&] { return cu.setDevice(0); }, false},
          {"cudaEventCreate", [&] { return cu.eventCreateWithFlags(&created[k], cudaEventDisableTiming); }, true},
          {"cudaEventDestroy", [&] { return cu.eventDestroy(spare[k]); }, true},
      };
      HeldStream& held = copiers[k].held;
      for (const Case& c : cases) {
        if (std::string err = held.hold(); !err.empty()) return err;
        auto copying = std::async(std::launch::async, [&] {
          return cu.memcpyAsync(pageable.data(), dev, pageable.size(), cudaMemcpyDeviceToHost,
                                static_cast<cudaStream_t>(held.stream));
        });
        bool copyWaited = copying.wait_for(std::chrono::milliseconds(300)) != std::future_status::ready;
        auto done = std::async(std::launch::async, c.call);
        const bool waited = done.wait_for(std::chrono::seconds(2)) != std::future_status::ready;
        held.release();
        if (copying.wait_for(std::chrono::seconds(20)) != std::future_status::ready ||
            done.wait_for(std::chrono::seconds(20)) != std::future_status::ready)
          return std::string(c.name) + ": never ended";
        if (!copyWaited) return std::string(copiers[k].name) + " did not wait for the held stream";
        (void)rt.synchronize(held.stream);
        (void)rt.synchronize(*other);
        fprintf(stderr, "%s %s for %s\n", c.name, waited ? "waited" : "did not wait", copiers[k].name);
        if (waited != c.waits)
          disagree += std::string(c.name) + (waited ? " waited for " : " did not wait for ") + copiers[k].name + "; ";
      }
    }
    cu.eventDestroy(e);
    for (cudaEvent_t c : created)
      if (c) cu.eventDestroy(c);
    return disagree;
  }), "");
}

// A user thread captures a graph in global mode (PyTorch's default) while
// tutti's threads allocate, register, query and wait: tutti's calls succeed
// and the capture stays valid (CUDA refuses unsafe calls from every thread
// during such a capture unless that thread's mode is relaxed). Then the
// rule itself: the same call from a thread in global mode fails and
// invalidates the capture.
TEST_P(CudaRules, TuttisCallsLeaveAnotherThreadsCaptureValid) {
  EXPECT_EQ(withCuda([](const CudaApi& cu, DeviceRuntime& rt) -> std::string {
    if (!rt.setDevice(0).ok() || !rt.loadKernels().ok()) return "setup";
    void *src = nullptr, *dst = nullptr;
    cudaStream_t user = nullptr;
    if (cu.malloc(&src, 4096) != cudaSuccess || cu.malloc(&dst, 4096) != cudaSuccess ||
        cu.streamCreateWithFlags(&user, cudaStreamNonBlocking) != cudaSuccess)
      return "user setup";
    auto own = rt.createStream();
    if (!own.ok()) return "tutti's stream";
    if (cu.streamBeginCapture(user, cudaStreamCaptureModeGlobal) != cudaSuccess) return "begin capture";
    if (cu.launchCopy(dst, src, 4096, user) != 0) return "captured launch";
    std::string during = std::async(std::launch::async, [&]() -> std::string {
      if (!rt.setDevice(0).ok()) return "setDevice";
      std::vector<char> host(1 << 16);
      auto device = rt.allocDevice(1 << 20);
      if (!device.ok()) return "allocDevice: " + device.status().message();
      auto pinned = rt.allocPinned(4096);
      if (!pinned.ok()) return "allocPinned: " + pinned.status().message();
      auto mapped = rt.registerHost(host.data(), host.size());
      if (!mapped.ok()) return "registerHost: " + mapped.status().message();
      auto e = rt.createEvent();
      if (!e.ok() || !rt.recordInto(*e, *own).ok()) return "event";
      if (!rt.waitEvent(*e).ok()) return "waitEvent";
      auto done = rt.eventDone(*e);
      if (!done.ok() || !*done) return "eventDone";
      if (!rt.synchronize(*own).ok()) return "synchronize";
      rt.destroyEvent(*e);
      rt.unregisterHost(host.data());
      rt.freePinned(*pinned);
      rt.freeDevice(*device);
      return "";
    }).get();
    cudaGraph_t graph = nullptr;
    cudaError_t ended = cu.streamEndCapture(user, &graph);
    if (!during.empty()) return "tutti's call during the capture: " + during;
    if (ended != cudaSuccess) return std::string("the capture was invalidated: ") + cudaGetErrorName(ended);
    cudaGraphExec_t exec = nullptr;
    if (cu.graphInstantiate(&exec, graph, 0) != cudaSuccess || cu.graphLaunch(exec, user) != cudaSuccess ||
        cu.streamSynchronize(user) != cudaSuccess)
      return "the captured graph did not run";
    // The rule: an allocation from a thread in global mode.
    if (cu.streamBeginCapture(user, cudaStreamCaptureModeGlobal) != cudaSuccess) return "second capture";
    cudaError_t alloc = std::async(std::launch::async, [&] {
      void* p = nullptr;
      return cu.malloc(&p, 1 << 20);
    }).get();
    cudaGraph_t second = nullptr;
    cudaError_t secondEnd = cu.streamEndCapture(user, &second);
    (void)cu.getLastError();
    if (alloc == cudaSuccess) return "cudaMalloc in global mode during another thread's global capture succeeded";
    if (secondEnd != cudaErrorStreamCaptureInvalidated)
      return std::string("that capture ended with ") + cudaGetErrorName(secondEnd) + ", not invalidated";
    cu.graphExecDestroy(exec);
    cu.graphDestroy(graph);
    return "";
  }), "");
}

// A captured event cannot be queried, a capturing stream cannot be
// synchronized, and a graph's host function runs on every replay.
TEST_P(CudaRules, CapturedEventsAndReplays) {
  EXPECT_EQ(withCuda([](const CudaApi& cu, DeviceRuntime& rt) -> std::string {
    if (!rt.setDevice(0).ok()) return "setup";
    cudaStream_t s = nullptr;
    cudaEvent_t e = nullptr;
    if (cu.streamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
        cu.eventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess)
      return "setup";
    std::string out;
    if (cu.streamBeginCapture(s, cudaStreamCaptureModeRelaxed) != cudaSuccess) return "begin";
    if (cu.eventRecord(e, s) != cudaSuccess) return "captured record";
    if (cu.eventQuery(e) == cudaSuccess) out += "a captured event was queried; ";
    if (cu.streamSynchronize(s) == cudaSuccess) out += "a capturing stream was synchronized; ";
    cudaGraph_t g = nullptr;
    (void)cu.streamEndCapture(s, &g);
    if (g) cu.graphDestroy(g);
    (void)cu.getLastError();

    static std::atomic<int> runs{0};
    runs = 0;
    if (cu.streamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess) return "begin again";
    if (cu.launchHostFunc(s, [](void*) { ++runs; }, nullptr) != cudaSuccess) return "host node";
    if (cu.streamEndCapture(s, &g) != cudaSuccess) return "end";
    if (runs != 0) out += "a captured host function ran at capture; ";
    cudaGraphExec_t exec = nullptr;
    if (cu.graphInstantiate(&exec, g, 0) != cudaSuccess) return "instantiate";
    for (int i = 0; i < 3; ++i)
      if (cu.graphLaunch(exec, s) != cudaSuccess) return "launch";
    if (cu.streamSynchronize(s) != cudaSuccess) return "synchronize";
    if (runs != 3) out += "3 replays ran the host function " + std::to_string(runs.load()) + " time(s); ";
    cu.graphExecDestroy(exec);
    cu.graphDestroy(g);
    return out;
  }), "");
}

// Every host function of a process runs on one thread. (A CUDA call from
// one may fail with cudaErrorNotPermitted; the emulation always fails it.)
TEST_P(CudaRules, HostFunctionsShareOneThread) {
  const bool strict = !gpu();
  EXPECT_EQ(withCuda([strict](const CudaApi& cu, DeviceRuntime& rt) -> std::string {
    if (!rt.setDevice(0).ok()) return "setup";
    struct Seen {
      const CudaApi* cu;
      std::mutex mutex;
      std::set<std::thread::id> threads;
      int notPermitted = 0;
    } seen{&cu, {}, {}, 0};
    std::vector<cudaStream_t> streams(4);
    for (auto& s : streams)
      if (cu.streamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return "stream";
    for (int round = 0; round < 8; ++round)
      for (cudaStream_t s : streams)
        if (cu.launchHostFunc(s, [](void* p) {
              auto* seen = static_cast<Seen*>(p);
              int device = -1;
              const bool refused = seen->cu->getDevice(&device) == cudaErrorNotPermitted;
              std::lock_guard<std::mutex> lock(seen->mutex);
              seen->threads.insert(std::this_thread::get_id());
              seen->notPermitted += refused;
            }, &seen) != cudaSuccess)
          return "launchHostFunc";
    for (cudaStream_t s : streams)
      if (cu.streamSynchronize(s) != cudaSuccess) return "synchronize";
    fprintf(stderr, "%d of 32 CUDA calls from host functions were refused\n", seen.notPermitted);
    std::string out;
    if (seen.threads.size() != 1) out += std::to_string(seen.threads.size()) + " threads ran host functions; ";
    if (strict && seen.notPermitted != 32) out += "the emulation let a host function call CUDA; ";
    return out;
  }), "");
}

// The worker kernel that runs a device call's ops (kernels/op_queue.h):
// every dtype x op reduce, at counts around the vector width and with
// operands that do or do not share their alignment, a divide and a byte
// copy, bit for bit against the host's kernels; then 1,500 increments of
// one buffer, each reading the one before (order, and the queue's ring
// going round), and a second worker taking up where the first stopped.
// `lean`: which kernel (TUTTI_DEVICE_WORKER). "" when every result is right.
std::string workerRunsQueuedOps(DeviceRuntime& rt, bool lean) {
  if (!rt.setDevice(0).ok() || !rt.loadKernels().ok()) return "setup";
  // Uploads on a stream of their own: a copy from pageable memory on the
  // worker's stream would wait for the worker, which waits for the ops.
  auto stream = rt.createStream();
  auto uploads = rt.createStream();
  if (!stream.ok() || !uploads.ok()) return "streams";
  auto queue = OpQueue::create(rt, *stream, nullptr, 300, 1, lean);
  if (!queue.ok()) return queue.status().message();
  DeviceReducer device(**queue);
  struct Check {
    std::string label;
    void* got;
    std::vector<unsigned char> want;
  };
  std::vector<Check> checks;
  auto upload = [&](const std::vector<unsigned char>& host) {
    void* p = *rt.allocDevice(host.size());
    // A copy from pageable memory may return before it lands (CUDA stages
    // it): the worker's ops are not ordered after `uploads`.
    (void)rt.copyAsync(p, host.data(), host.size(), *uploads);
    (void)rt.synchronize(*uploads);
    return static_cast<char*>(p);
  };
  auto bytesOf = [](size_t n, uint32_t seed) {
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((seed * 2654435761u + i * 40503u) >> 7 & 0x3f);
    return v;
  };
  // Every buffer is made before the worker starts, as a call's buffers
  // are: compute-sanitizer's memcheck counts an allocation made while a
  // kernel runs as out of bounds for it (H200 run 9). The ops go to the
  // queue once it runs.
  std::vector<std::function<void()>> ops;
  for (int t = 0; t < kNumDataTypes; ++t)
    for (int o = 0; o < kNumRedOps; ++o)
      for (size_t count : {size_t{7}, size_t{1031}, size_t{(1 << 18) + 5}})
        for (size_t shift : {0, 1}) {
          const DataType dtype = static_cast<DataType>(t);
          const RedOp op = static_cast<RedOp>(o);
          const size_t es = dtypeSize(dtype), bytes = (count + 1) * es;
          auto a = bytesOf(bytes, 1 + t), b = bytesOf(bytes, 100 + o);
          std::vector<unsigned char> want(count * es);
          hostReducer().reduce(want.data(), a.data(), b.data() + shift * es, count, dtype, op, 3);
          char* da = upload(a);
          char* db = upload(b);
          char* dd = upload(std::vector<unsigned char>(bytes));
          ops.push_back([&device, dd, da, db, shift, es, count, dtype, op] {
            device.reduce(dd, da, db + shift * es, count, dtype, op, 3);
          });
          checks.push_back({std::string(dtypeName(dtype)) + " " + redOpName(op) + " count " + std::to_string(count) +
                                " shift " + std::to_string(shift),
                            dd, std::move(want)});
        }
  auto a = bytesOf(4 * 100003 + 16, 7);
  std::vector<unsigned char> quotient(4 * 100003);
  hostReducer().divide(quotient.data(), a.data(), 100003, DataType::kFloat32, 5);
  char* da = upload(a);
  char* dq = upload(std::vector<unsigned char>(quotient.size()));
  char* dc = upload(std::vector<unsigned char>(a.size()));
  ops.push_back([&device, dq, da, dc, bytes = quotient.size()] {
    device.divide(dq, da, 100003, DataType::kFloat32, 5);
    device.copy(dc + 3, dq, bytes);  // after the divide, to an odd offset
  });
  checks.push_back({"divide", dq, quotient});
  checks.push_back({"copy at an odd offset", dc + 3, quotient});
  // acc += one, 1,500 times: each increment reads the one before.
  const int kIncrements = 1500;
  std::vector<unsigned char> ones(4 * 4099), zero(4 * 4099, 0), total(4 * 4099);
  for (size_t i = 0; i < 4099; ++i) {
    const int32_t one = 1, sum = kIncrements;
    std::memcpy(&ones[4 * i], &one, 4);
    std::memcpy(&total[4 * i], &sum, 4);
  }
  char* acc = upload(zero);
  char* done = upload(ones);
  char* again = upload(zero);
  if (!(*queue)->launchWorker({}).ok()) return "launching the worker";
  for (auto& queueOp : ops) queueOp();
  for (int i = 0; i < kIncrements; ++i) device.reduce(acc, acc, done, 4099, DataType::kInt32, RedOp::kSum, 1);
  if (!(*queue)->stop().ok()) return "stopping the worker";
  // A second worker, from where the first stopped.
  if (!(*queue)->launchWorker({}).ok()) return "launching the second worker";
  device.reduce(again, acc, done, 4099, DataType::kInt32, RedOp::kSum, 1);
  if (!(*queue)->stop().ok() || !device.takeError().ok()) return "stopping the second worker";
  const int32_t plusOne = kIncrements + 1;
  std::vector<unsigned char> totalPlusOne(total.size());
  for (size_t i = 0; i < 4099; ++i) std::memcpy(&totalPlusOne[4 * i], &plusOne, 4);
  checks.push_back({"1,500 increments in order", acc, total});
  checks.push_back({"the second worker", again, totalPlusOne});
  if (!rt.synchronize(*stream).ok()) return "the stream failed";
  std::string wrong;
  for (const Check& c : checks) {
    std::vector<unsigned char> got(c.want.size());
    if (!rt.copyAsync(got.data(), c.got, got.size(), *stream).ok() || !rt.synchronize(*stream).ok())
      return c.label + ": reading back";
    if (got != c.want) wrong += c.label + ": wrong result; ";
  }
  return wrong;
}

TEST_P(CudaRules, TheWorkerRunsQueuedOpsInOrderBitForBit) {
  for (bool lean : {false, true})
    EXPECT_EQ(withCuda([lean](const CudaApi&, DeviceRuntime& rt) { return workerRunsQueuedOps(rt, lean); }), "")
        << (lean ? "the lean worker" : "the grid worker");
}

INSTANTIATE_TEST_SUITE_P(Cudas, CudaRules, ::testing::Values(Cuda::kGpu, Cuda::kEmulated),
                         [](const auto& info) { return info.param == Cuda::kGpu ? "gpu" : "emulated"; });

// On a GPU a host function that waits for another never returns (one
// thread runs them all); the emulation aborts, saying why.
void waitInAHostFunctionForAnother() {
  FakeDevice device(1);
  EmulatedCuda cuda(device);
  cuda.setHostFunctionLimit(1);
  const CudaApi& cu = EmulatedCuda::api();
  static std::atomic<bool> flag{false};
  cudaStream_t a = nullptr;
  cudaStream_t b = nullptr;
  cu.streamCreateWithFlags(&a, cudaStreamNonBlocking);
  cu.streamCreateWithFlags(&b, cudaStreamNonBlocking);
  cu.launchHostFunc(a, [](void*) { while (!flag) std::this_thread::sleep_for(std::chrono::milliseconds(1)); }, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  cu.launchHostFunc(b, [](void*) { flag = true; }, nullptr);
  cu.streamSynchronize(a);
}

TEST(EmulatedCudaDeath, AHostFunctionWaitingForAnotherAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(waitInAHostFunctionForAnother(), "host functions on one thread");
}

}  // namespace
}  // namespace tutti
