// Device buffers on the emulated device (src/device/emulated_device.h) for
// the collective cases, and the device's own counters read back as the path
// a rank's device calls took: tests of the device path on machines without
// a GPU share these.
#pragma once

#include <string>

#include "tests/collectives/collective_cases.h"
#include "tests/harness/fake_device.h"

namespace tutti_test {

// One emulated device (two GPUs) per rank process, installed before tutti looks.
FakeDevice& processDevice();

// Case buffers and a stream on an emulated device.
class EmulatedCaseDevice final : public CaseDevice {
 public:
  explicit EmulatedCaseDevice(FakeDevice& d);
  ~EmulatedCaseDevice() override;
  void* buffer(int which, size_t bytes) override;
  void upload(void* dev, const void* host, size_t bytes) override;
  void download(void* host, const void* dev, size_t bytes) override;
  void* stream() override { return stream_; }
  std::string synchronize() override;

 private:
  struct Buffer {
    void* p = nullptr;
    size_t bytes = 0;
  };
  FakeDevice& d_;
  tutti::DeviceStream stream_;
  Buffer buffers_[2];
};

// A 64 MiB all-reduce (odd count), then an all-gather and an in-place
// reduce-scatter of as much in all, on device buffers: many chunks in
// flight, every slot reused. "" or the first wrong case.
std::string runLargeCases(tuttiComm_t comm, int rank, int nranks, CaseDevice* dev);

// What the device and the host reducer of this process did so far.
struct Tally {
  FakeDevice::Counters device;
  uint64_t hostReducer = 0;
  static Tally now();
};

// The path device calls must take: P2P (IPC maps, kernels on peers' memory)
// and/or slots of shared memory or the network mapped into the device.
struct Route {
  bool p2p;
  bool mappedHost;
};

// "" when the device calls since `before` took `route` and nothing else: no
// host reducer call, no staging through pinned memory, no device memory call
// while a gate held a stream; otherwise what went wrong.
std::string checkRoute(Route route, int nranks, const Tally& before);

}  // namespace tutti_test
