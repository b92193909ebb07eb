#include "tests/harness/emulated_case_device.h"

#include "kernels/reducer.h"
#include "src/device/device_runtime.h"

namespace tutti_test {

FakeDevice& processDevice() {
  static FakeDevice* device = [] {
    auto* d = new FakeDevice(2);
    tutti::setDeviceRuntime(d);
    // As an NCCL program does before its communicators: the device is set
    // (since CUDA 12 that makes its context), so they make their device
    // side at init. DeviceContexts tests the other case.
    (void)d->setDevice(0);
    return d;
  }();
  return *device;
}

EmulatedCaseDevice::EmulatedCaseDevice(FakeDevice& d) : d_(d) { stream_ = *d_.createStream(); }

EmulatedCaseDevice::~EmulatedCaseDevice() {
  for (auto& b : buffers_)
    if (b.p) d_.free(b.p);
  d_.destroyStream(stream_);
}

void* EmulatedCaseDevice::buffer(int which, size_t bytes) {
  Buffer& b = buffers_[which];
  if (b.bytes < bytes) {
    if (b.p) d_.free(b.p);
    b = {d_.alloc(bytes), bytes};
  }
  return b.p;
}

void EmulatedCaseDevice::upload(void* dev, const void* host, size_t bytes) { d_.upload(dev, host, bytes); }
void EmulatedCaseDevice::download(void* host, const void* dev, size_t bytes) { d_.download(host, dev, bytes); }

std::string EmulatedCaseDevice::synchronize() {
  tutti::Status st = d_.synchronize(stream_);
  return st.ok() ? "" : st.message();
}

std::string runLargeCases(tuttiComm_t comm, int rank, int nranks, CaseDevice* dev) {
  const size_t large = (size_t(64) << 20) / sizeof(float);
  const size_t piece = large / nranks + 1;
  for (const Case& c : {Case{Coll::kAllReduce, tuttiFloat32, tuttiSum, large + 3, false, 0, 5},
                        Case{Coll::kAllGather, tuttiFloat32, tuttiSum, piece, false, 0, 6},
                        Case{Coll::kReduceScatter, tuttiFloat32, tuttiMax, piece, true, 0, 8}}) {
    std::string err = runCase(comm, rank, nranks, c, dev);
    if (!err.empty()) return err;
  }
  return "";
}

Tally Tally::now() { return {processDevice().counters(), tutti::hostReducerCalls()}; }

std::string checkRoute(Route route, int nranks, const Tally& before) {
  const Tally after = Tally::now();
  const auto& d = after.device;
  const auto& b = before.device;
  if (d.memoryCallsWhileStreamHeld > 0)
    return "device memory was allocated, freed or mapped while a gate held a caller's stream";
  if (after.hostReducer != before.hostReducer)
    return std::to_string(after.hostReducer - before.hostReducer) +
           " host reducer calls during device calls (every step must be a device kernel or copy)";
  if (d.pinnedAllocations != b.pinnedAllocations) return "device calls staged through pinned host memory";
  if (nranks == 1) return "";
  const long peer = d.peerOps - b.peerOps, mapped = d.mappedHostOps - b.mappedHostOps;
  // IPC maps are counted since the device was made: connections made at
  // init map their peers' slots before a test's calls begin.
  if (route.p2p && (d.ipcOpens == 0 || peer == 0))
    return "no P2P: " + std::to_string(d.ipcOpens) + " IPC maps, " + std::to_string(peer) +
           " device operations on peers' memory";
  if (!route.p2p && (peer > 0 || d.ipcOpens != 0)) return "P2P used where no peer shares the node";
  if (route.mappedHost && mapped == 0) return "no device operation touched mapped host slots";
  if (!route.mappedHost && mapped > 0)
    return std::to_string(mapped) + " device operations on mapped host slots where P2P reaches every peer";
  return "";
}

}  // namespace tutti_test
