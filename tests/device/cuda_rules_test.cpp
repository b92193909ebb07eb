// What the emulated device assumes of CUDA, checked on a GPU (skipped
// without one): which calls wait while a stream is held by a gate (a stream
// wait on a page-locked word, as tutti's gates are). The emulated device
// makes frees wait (cudaFree, cudaFreeHost) and a kernel's first launch
// (lazy loading); it lets allocations and registrations go on. If a GPU
// disagrees, the emulated device is wrong and must follow.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_reduce.h"
#include "src/device/device_runtime.h"
#include "tests/device/gpu_probe.h"

namespace tutti {
namespace {

class CudaRules : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!tutti_test::gpuAvailable(&reason)) GTEST_SKIP() << reason;
  }
};

// Whether `call` is still running 2 s after it started while a gate holds
// a stream of this process; the gate opens then, and the call must end.
std::string waitsForAHeldStream(DeviceRuntime& rt, DeviceStream held, uint32_t* word,
                                const std::function<void()>& call, bool* waited) {
  const uint32_t ticket = __atomic_load_n(word, __ATOMIC_ACQUIRE) + 1;
  Status st = rt.waitWordAsync(held, word, ticket);
  if (!st.ok()) return st.message();
  auto done = std::async(std::launch::async, call);
  *waited = done.wait_for(std::chrono::seconds(2)) != std::future_status::ready;
  __atomic_store_n(word, ticket, __ATOMIC_RELEASE);
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) return "the call never ended";
  return rt.synchronize(held).ok() ? "" : "the held stream failed";
}

TEST_F(CudaRules, WhatWaitsForAStreamHeldByAGate) {
  EXPECT_EQ(tutti_test::inChild([]() -> std::string {
    DeviceRuntime& rt = *cudaDeviceRuntime();
    if (!rt.setDevice(0).ok()) return "setDevice";
    auto page = rt.allocPinned(4096);
    auto held = rt.createStream();
    if (!page.ok() || !held.ok()) return "setup";
    auto* word = static_cast<uint32_t*>(*page);
    *word = 0;
    void* device = nullptr;
    void* pinned = nullptr;
    std::vector<char> host(1 << 20);
    struct Case {
      const char* name;
      std::function<void()> call;
      bool emulatedWaits;  // what src/device/emulated_device.cpp assumes
    };
    const std::vector<Case> cases{
        {"loading the kernels (a first launch)", [] { cuda::loadKernels(); }, true},
        {"cudaMalloc", [&] { cudaMalloc(&device, 1 << 20); }, false},
        {"cudaFree", [&] { cudaFree(device); }, true},
        {"cudaHostAlloc", [&] { cudaHostAlloc(&pinned, 1 << 20, cudaHostAllocPortable); }, false},
        {"cudaFreeHost", [&] { cudaFreeHost(pinned); }, true},
        {"cudaHostRegister", [&] { cudaHostRegister(host.data(), host.size(), cudaHostRegisterMapped); }, false},
        {"cudaHostUnregister", [&] { cudaHostUnregister(host.data()); }, true},
    };
    std::string disagree;
    for (const Case& c : cases) {
      bool waited = false;
      std::string err = waitsForAHeldStream(rt, *held, word, c.call, &waited);
      if (!err.empty()) return std::string(c.name) + ": " + err;
      fprintf(stderr, "%s %s for the held stream\n", c.name, waited ? "waited" : "did not wait");
      if (waited != c.emulatedWaits)
        disagree += std::string(c.name) + (waited ? " waited" : " did not wait") + " (the emulated device assumes the other); ";
    }
    return disagree;
  }), "");
}

// A user thread captures a graph in global mode (PyTorch's default) while
// tutti's threads allocate, register, query and wait: tutti's calls succeed
// and the capture stays valid (CUDA refuses unsafe calls from every thread
// during such a capture unless that thread's mode is relaxed).
TEST_F(CudaRules, TuttisCallsLeaveAnotherThreadsCaptureValid) {
  EXPECT_EQ(tutti_test::inChild([]() -> std::string {
    DeviceRuntime& rt = *cudaDeviceRuntime();
    if (!rt.setDevice(0).ok() || !rt.loadKernels().ok()) return "setup";
    void *src = nullptr, *dst = nullptr;
    cudaStream_t user = nullptr;
    if (cudaMalloc(&src, 4096) != cudaSuccess || cudaMalloc(&dst, 4096) != cudaSuccess ||
        cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking) != cudaSuccess)
      return "user setup";
    auto own = rt.createStream();
    if (!own.ok()) return "tutti's stream";
    if (cudaStreamBeginCapture(user, cudaStreamCaptureModeGlobal) != cudaSuccess) return "begin capture";
    if (cuda::launchCopy(dst, src, 4096, user) != 0) return "captured launch";
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
    cudaError_t ended = cudaStreamEndCapture(user, &graph);
    if (!during.empty()) return "tutti's call during the capture: " + during;
    if (ended != cudaSuccess) return std::string("the capture was invalidated: ") + cudaGetErrorString(ended);
    cudaGraphExec_t exec = nullptr;
    if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess || cudaGraphLaunch(exec, user) != cudaSuccess ||
        cudaStreamSynchronize(user) != cudaSuccess)
      return "the captured graph did not run";
    return "";
  }), "");
}

}  // namespace
}  // namespace tutti
