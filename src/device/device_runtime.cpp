#include "src/device/device_runtime.h"

#include <atomic>
#include <algorithm>
#include <cstdlib>

#include "src/common/config.h"
#include "src/device/emulated_device.h"

namespace tutti {

namespace {

// What a process without a usable GPU has: host memory only.
class NoDeviceRuntime final : public DeviceRuntime {
 public:
  explicit NoDeviceRuntime(std::string reason) : DeviceRuntime(false), reason_(std::move(reason)) {}
  const char* name() const override { return "none"; }
  int deviceCount() override { return 0; }
  std::string unavailableReason() override { return reason_; }
  Result<int> currentDevice() override { return refuse(); }
  Status setDevice(int) override { return refuse(); }
  Result<std::string> pciBusId(int) override { return refuse(); }
  PointerInfo pointerInfo(const void*) override { return {}; }
  bool contextActive(int) override { return false; }
  Result<DeviceStream> createStream() override { return refuse(); }
  void destroyStream(DeviceStream) override {}
  Status waitEvent(DeviceEvent) override { return refuse(); }
  void destroyEvent(DeviceEvent) override {}
  Status synchronize(DeviceStream) override { return refuse(); }
  Status waitWordAsync(DeviceStream, const uint32_t*, uint32_t) override { return refuse(); }
  Result<bool> capturing(DeviceStream) override { return refuse(); }
  Result<void*> allocPinned(size_t) override { return refuse(); }
  void freePinned(void*) override {}
  Result<void*> registerHost(void*, size_t) override { return refuse(); }
  void unregisterHost(void*) override {}
  Status copyAsync(void*, const void*, size_t, DeviceStream) override { return refuse(); }
  Result<DeviceEvent> createEvent() override { return refuse(); }
  Status recordInto(DeviceEvent, DeviceStream) override { return refuse(); }
  Result<bool> eventDone(DeviceEvent) override { return refuse(); }
  Result<void*> allocDevice(size_t) override { return refuse(); }
  Status loadKernels() override { return refuse(); }
  Status streamWaitEvent(DeviceStream, DeviceEvent) override { return refuse(); }
  Status launchWorker(void*, void*, unsigned, bool, DeviceStream) override { return refuse(); }
  size_t workerScratchBytes() override { return 0; }
  unsigned workerBlocks(int) override { return 1; }
  Status flushRemoteWrites() override { return refuse(); }
  void freeDevice(void*) override {}
  Status reduceAsync(void*, const void*, const void*, size_t, DataType, RedOp, int, DeviceStream) override {
    return refuse();
  }
  Result<int> deviceByBusId(const std::string&) override { return refuse(); }
  bool canAccessPeer(int, int) override { return false; }
  Status enablePeerAccess(int) override { return refuse(); }
  Result<DeviceIpcHandle> exportMemory(void*) override { return refuse(); }
  Result<void*> openMemory(const DeviceIpcHandle&) override { return refuse(); }
  void closeMemory(void*) override {}

 private:
  Status refuse() const { return InvalidUsage("no CUDA device: " + reason_); }
  std::string reason_;
};

std::atomic<DeviceRuntime*> gOverride{nullptr};

DeviceRuntime& defaultRuntime() {
  static DeviceRuntime* chosen = [] () -> DeviceRuntime* {
    auto emulated = tunableInt("EMULATE_DEVICE");  // a bad value is refused at init
    if (emulated.ok() && *emulated > 0) return new EmulatedDevice(static_cast<int>(std::min<int64_t>(*emulated, 16)));
    DeviceRuntime* cuda = cudaDeviceRuntime();
    if (cuda && cuda->deviceCount() > 0) return cuda;
    return new NoDeviceRuntime(cuda ? cuda->unavailableReason()
                                    : "tutti was built without CUDA");
  }();
  return *chosen;
}

}  // namespace

DeviceRuntime& deviceRuntime() {
  DeviceRuntime* r = gOverride.load(std::memory_order_acquire);
  return r ? *r : defaultRuntime();
}

void setDeviceRuntime(DeviceRuntime* runtime) { gOverride.store(runtime, std::memory_order_release); }

DeviceScope::DeviceScope(DeviceRuntime& runtime, int device)
    : runtime_(runtime), callers_(runtime.currentDevice()) {
  if (!callers_.ok() || *callers_ != device) status_ = runtime.setDevice(device);
}

DeviceScope::~DeviceScope() {
  if (callers_.ok() && status_.ok()) (void)runtime_.setDevice(*callers_);
}

std::string describeDevice(int device) {
  if (device < 0) return "host-only";
  return "device " + std::to_string(device) + " (" + deviceRuntime().name() + ")";
}

#ifndef TUTTI_HAVE_CUDA
DeviceRuntime* cudaDeviceRuntime() { return nullptr; }
#endif

}  // namespace tutti
