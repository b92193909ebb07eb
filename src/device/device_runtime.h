// The device runtime: the few things tutti asks of CUDA, behind one small
// interface. libtutti uses the CUDA runtime when it was built with CUDA and a
// driver with a device is present, and a runtime with no devices otherwise;
// tests install an emulated device (tests/harness/fake_device.h) so the
// stream-ordered paths run on machines without a GPU.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/dtype.h"
#include "src/common/status.h"

namespace tutti {

using DeviceStream = void*;  // a cudaStream_t; nullptr is the legacy default stream
using DeviceEvent = void*;   // a cudaEvent_t

// Device memory exported to another process of the same node (a
// cudaIpcMemHandle_t: it names a whole allocation).
struct DeviceIpcHandle {
  char bytes[64] = {0};
};

// Where a buffer lives, as the runtime sees it.
struct PointerInfo {
  bool onDevice = false;  // device or managed memory: only stream-ordered access
  int device = -1;
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  // False when no pointer can be device memory (a process without a GPU):
  // a host call then asks nothing of its buffers.
  bool hasDeviceMemory() const { return hasDeviceMemory_; }
  // False while no device of the process has a context: nobody has used a
  // device yet, so no pointer is device memory and nothing need be asked
  // (asking could make a context). Once true, stays true.
  bool mayHoldDeviceMemory() {
    if (!hasDeviceMemory_) return false;
    if (contextSeen_.load(std::memory_order_relaxed)) return true;
    for (int d = 0, n = deviceCount(); d < n; ++d)
      if (contextActive(d)) {
        contextSeen_.store(true, std::memory_order_relaxed);
        return true;
      }
    return false;
  }
  virtual const char* name() const = 0;
  // Devices this process may use (CUDA_VISIBLE_DEVICES applies); 0 with a
  // reason when there is none.
  virtual int deviceCount() = 0;
  virtual std::string unavailableReason() = 0;
  // The calling thread's current device, and switching it.
  virtual Result<int> currentDevice() = 0;
  virtual Status setDevice(int device) = 0;
  // The device's PCI bus id ("0000:17:00.0"), to place it in the topology.
  virtual Result<std::string> pciBusId(int device) = 0;
  virtual PointerInfo pointerInfo(const void* p) = 0;
  // Whether the process holds the device's primary context (its memory,
  // streams and kernels live there): someone already used the device.
  // Asking makes no context; most other calls make one.
  virtual bool contextActive(int device) = 0;

  // Streams and events of tutti's own (the user's streams are only used).
  virtual Result<DeviceStream> createStream() = 0;
  virtual void destroyStream(DeviceStream s) = 0;
  virtual Status waitEvent(DeviceEvent e) = 0;  // blocks the calling thread
  virtual void destroyEvent(DeviceEvent e) = 0;
  virtual Status synchronize(DeviceStream s) = 0;
  // Holds the stream, from this point, until the 32-bit word at `word`
  // (allocPinned memory) reaches `value`: (int32_t)(*word - value) >= 0, so
  // a counter may wrap. The device waits, not a host thread: CUDA forbids
  // host functions that wait on other CUDA work, and runs a process's host
  // functions one at a time, so gates held that way wait on each other.
  virtual Status waitWordAsync(DeviceStream s, const uint32_t* word, uint32_t value) = 0;
  // Whether the stream is being captured into a CUDA graph.
  virtual Result<bool> capturing(DeviceStream s) = 0;

  // Page-locked host memory, which copies can reach without a bounce.
  virtual Result<void*> allocPinned(size_t bytes) = 0;
  virtual void freePinned(void* p) = 0;
  // Page-locks host memory the process already has (a shared segment, a
  // transport's slots) and maps it into every device; the device address.
  virtual Result<void*> registerHost(void* p, size_t bytes) = 0;
  virtual void unregisterHost(void* p) = 0;
  // One contiguous copy of any size between any two memories (not a
  // one-row 2-D copy: CUDA bounds a pitch at 2^31 - 1 bytes).
  virtual Status copyAsync(void* dst, const void* src, size_t bytes, DeviceStream s) = 0;

  // Events kept and recorded again (inputs-ready events of device calls).
  virtual Result<DeviceEvent> createEvent() = 0;
  virtual Status recordInto(DeviceEvent e, DeviceStream s) = 0;
  // True once the stream has passed the event's last record; never blocks.
  virtual Result<bool> eventDone(DeviceEvent e) = 0;

  // Device memory on the current device (communicator-lifetime buffers only:
  // freeing may wait for the device).
  virtual Result<void*> allocDevice(size_t bytes) = 0;
  virtual void freeDevice(void* p) = 0;
  // Makes writes a NIC did into the current device's memory (GPUDirect
  // RDMA) visible to its kernels: a completion says the data left the NIC,
  // not that it reached the GPU's memory.
  virtual Status flushRemoteWrites() = 0;
  // Loads tutti's kernels on the current device now, before any gate can
  // hold a stream: a kernel's first launch loads it (CUDA's lazy loading),
  // and loading waits for the device's streams to go idle.
  virtual Status loadKernels() = 0;
  // Stream `s` waits, on the device, for event `e`'s last record.
  virtual Status streamWaitEvent(DeviceStream s, DeviceEvent e) = 0;
  // The op queue's worker kernel on `s` (kernels/op_queue.h): `queue` is
  // the device's address of the mapped queue, `scratch` workerScratchBytes()
  // of zeroed device memory that every worker of the queue uses, with the
  // same `blocks` (workerBlocks()) and the same `lean` (which kernel:
  // TUTTI_DEVICE_WORKER).
  virtual Status launchWorker(void* queue, void* scratch, unsigned blocks, bool lean, DeviceStream s) = 0;
  virtual size_t workerScratchBytes() = 0;
  // The worker's grid when `sharers` ranks use this device at once.
  virtual unsigned workerBlocks(int sharers) = 0;
  // The reduction kernel (kernels/reducer.h's contract) on a stream, alone:
  // collectives do not launch it (their ops go to the worker, since a launch
  // from the background thread can wait for a copy that waits for the
  // collective); tests hold the adapter's launches to CUDA's rules with it.
  virtual Status reduceAsync(void* dst, const void* a, const void* b, size_t count, DataType dtype,
                             RedOp op, int divisor, DeviceStream s) = 0;

  // Peer-to-peer: the device numbered by this process that has the PCI bus
  // id; whether `device` can address `peer`'s memory (same device: yes);
  // letting the current device address the peer's memory.
  virtual Result<int> deviceByBusId(const std::string& busId) = 0;
  virtual bool canAccessPeer(int device, int peer) = 0;
  virtual Status enablePeerAccess(int peer) = 0;
  // CUDA IPC: an allocation from allocDevice (its base pointer), exported
  // and mapped by another process of this node (same device or a
  // peer-accessible one).
  virtual Result<DeviceIpcHandle> exportMemory(void* p) = 0;
  virtual Result<void*> openMemory(const DeviceIpcHandle& handle) = 0;
  virtual void closeMemory(void* p) = 0;

 protected:
  explicit DeviceRuntime(bool hasDeviceMemory = true) : hasDeviceMemory_(hasDeviceMemory) {}

 private:
  const bool hasDeviceMemory_;
  std::atomic<bool> contextSeen_{false};
};

// Makes `device` current on this thread for a scope, then the caller's again
// (CUDA allocates and creates events on the current device).
class DeviceScope {
 public:
  DeviceScope(DeviceRuntime& runtime, int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  const Status& status() const { return status_; }

 private:
  DeviceRuntime& runtime_;
  Result<int> callers_;
  Status status_;
};

// The runtime of this process (see above). Tests may replace it before any
// communicator is made; nullptr restores the default.
DeviceRuntime& deviceRuntime();
void setDeviceRuntime(DeviceRuntime* runtime);

// The CUDA runtime, or nullptr when tutti was built without CUDA.
DeviceRuntime* cudaDeviceRuntime();

// "device 1 (CUDA)", "host-only" and the like for messages.
std::string describeDevice(int device);

}  // namespace tutti
