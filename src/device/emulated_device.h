// An emulated CUDA device, for machines without a GPU: it lets the
// stream-ordered paths run for real (TUTTI_EMULATE_DEVICE=N gives a process
// N of them; tests install one directly). Device memory sits at addresses
// that are not mapped in the process (its bytes live elsewhere), so any host
// access to it by tutti crashes instead of passing; only the runtime's copies
// and kernels reach it. Kernels refuse host memory that was not page-locked
// and mapped (registerHost, allocPinned), as a GPU would fault on it. Each
// stream is an in-order thread; events and host work run there, or are
// recorded while the stream is captured. The legacy default stream and the
// blocking streams wait for each other, as CUDA's do. A device's context is
// made by the first call that needs one, as CUDA's primary context is. What
// the device touched is counted, so a test can tell which path a call took.
// CUDA's runtime API rules over this device: tests/harness/emulated_cuda.h.
#pragma once

#include <unistd.h>

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kernels/op_queue.h"
#include "src/device/device_runtime.h"

namespace tutti {

class EmulatedDevice final : public DeviceRuntime {
 public:
  explicit EmulatedDevice(int devices = 1, std::vector<std::string> busIds = {});
  ~EmulatedDevice() override;

  // Device memory on `device`, and copies to and from it for tests and tools.
  void* alloc(size_t bytes, int device = 0);
  void free(void* p);
  void upload(void* device, const void* host, size_t bytes);
  void download(void* host, const void* device, size_t bytes);
  // Holds the stream at this point until release(): a test sees what a
  // call does before its stream gets there.
  void hold(DeviceStream s);
  void release();

  // What the device did so far (counts since the device was made).
  struct Counters {
    int gates = 0;           // stream waits on a word (gates) passed on any stream
    int pinnedAllocations = 0;
    int ipcOpens = 0;        // device memory mapped from another process
    int hostRegistrations = 0;
    // Device operations (kernels and copies) by the memory they touched:
    long peerOps = 0;        // another device's memory, or another process's (P2P)
    long mappedHostOps = 0;  // page-locked host memory mapped into the device
    long deviceOps = 0;      // only this device's own memory
    int remoteWriteFlushes = 0;  // flushRemoteWrites calls (GPUDirect RDMA receives)
    // Device memory allocated, freed or mapped while a gate held a stream:
    // on a GPU a free then waits for the gate, which waits for the
    // collective, which waits for the free.
    int memoryCallsWhileStreamHeld = 0;
  };
  Counters counters() const;
  // Whether distinct devices may address each other (default yes).
  void setPeerAccess(bool allowed) { peerAccess_ = allowed; }

  // Capture, as the emulated CUDA API (tests/harness/emulated_cuda.h) needs
  // it: from beginCapture on, what the stream is given is recorded, not
  // run; replay runs the recorded work on a stream again, each time.
  using Graph = std::vector<std::function<void()>>;
  void beginCapture(DeviceStream s);
  Graph endCapture(DeviceStream s);
  void replay(const Graph& graph, DeviceStream s);
  // Host work in stream order (recorded while capturing): a host function.
  void enqueueHostWork(DeviceStream s, std::function<void()> work);
  // Whether the event's last record was captured (it never completes).
  bool eventCaptured(DeviceEvent e);
  // The context's sticky error (ok while none), and whether this process
  // is a fork of the one that used the device.
  Status stickyError() const { return sticky(); }
  // Whether the range is host memory neither page-locked nor mapped.
  bool pageable(const void* p, size_t bytes);
  bool forked() const { return getpid() != owner_; }

  const char* name() const override { return "emulated"; }
  int deviceCount() override { return devices_; }
  std::string unavailableReason() override { return ""; }
  Result<int> currentDevice() override;
  Status setDevice(int device) override;
  Result<std::string> pciBusId(int device) override;
  PointerInfo pointerInfo(const void* p) override;
  // A device's context is made by the first call that needs one (setting
  // the device, allocating, making a stream or event, launching), as CUDA
  // makes its primary context.
  bool contextActive(int device) override;
  // Non-blocking, as tutti makes its own; createBlockingStream's stream is
  // ordered with the device's legacy default stream (nullptr), as CUDA's
  // streams made without cudaStreamNonBlocking are.
  Result<DeviceStream> createStream() override;
  Result<DeviceStream> createBlockingStream();
  void destroyStream(DeviceStream s) override;
  Status waitEvent(DeviceEvent e) override;
  void destroyEvent(DeviceEvent e) override;
  Status synchronize(DeviceStream s) override;
  Status waitWordAsync(DeviceStream s, const uint32_t* word, uint32_t value) override;
  Result<bool> capturing(DeviceStream s) override;
  Result<void*> allocPinned(size_t bytes) override;
  void freePinned(void* p) override;
  Result<void*> registerHost(void* p, size_t bytes) override;
  void unregisterHost(void* p) override;
  Status copyAsync(void* dst, const void* src, size_t bytes, DeviceStream s) override;
  Result<DeviceEvent> createEvent() override;
  Status recordInto(DeviceEvent e, DeviceStream s) override;
  Result<bool> eventDone(DeviceEvent e) override;
  Result<void*> allocDevice(size_t bytes) override;
  void freeDevice(void* p) override;
  Status loadKernels() override;
  Status streamWaitEvent(DeviceStream s, DeviceEvent e) override;
  // Either kernel runs as the queue's semantics say (`lean` changes only
  // how a GPU's blocks share the ops).
  Status launchWorker(void* queue, void* scratch, unsigned blocks, bool lean, DeviceStream s) override;
  size_t workerScratchBytes() override { return sizeof(uint64_t); }
  unsigned workerBlocks(int) override { return 2; }
  Status flushRemoteWrites() override;
  Status reduceAsync(void* dst, const void* a, const void* b, size_t count, DataType dtype, RedOp op,
                     int divisor, DeviceStream s) override;
  // The emulated CUDA API's kernels and events beyond the runtime's
  // interface (tests/harness/emulated_cuda.cpp).
  Result<DeviceEvent> recordEvent(DeviceStream s);
  Status copyKernelAsync(void* dst, const void* src, size_t bytes, DeviceStream s);
  Status divideAsync(void* dst, const void* src, size_t count, DataType dtype, int divisor, DeviceStream s);
  Result<int> deviceByBusId(const std::string& busId) override;
  bool canAccessPeer(int device, int peer) override { return device == peer || peerAccess_; }
  Status enablePeerAccess(int peer) override;
  // IPC: the allocation's memory is a memfd the other process opens
  // through /proc, mapped at a fresh unreadable address there; opening a
  // handle again gives the same address (reference counted), and opening
  // one whose exporter has exited fails.
  Result<DeviceIpcHandle> exportMemory(void* p) override;
  Result<void*> openMemory(const DeviceIpcHandle& handle) override;
  void closeMemory(void* p) override;

 private:
  struct Allocation;
  struct HostRange;
  struct Stream;
  struct Latch;
  enum class Place { kOwn, kPeer, kMappedHost, kPageableHost };
  Stream& streamOf(DeviceStream s);
  // Work in stream order, or recorded when the stream is being captured.
  void enqueue(Stream& stream, std::function<void()> work);
  void post(Stream& stream, std::function<void()> work);
  void recordOn(Stream& stream, void* event);
  // The current device's context, made if it is not yet.
  void useContext();
  // Where a pointer's bytes really are (device addresses are translated).
  void* backing(const void* p);
  Place placeOf(const void* p, size_t bytes);
  const Allocation* allocationOf(const void* p) const;  // under mutex_
  // Counts one operation over `places`; a kernel on pageable host memory is
  // refused, as a GPU faults on it.
  Status touch(std::initializer_list<std::pair<const void*, size_t>> operands, bool kernel, const char* what);
  // Registers shared `bytes` (a memfd's mapping) behind a fresh unreadable address.
  void* addAllocation(char* bytes, size_t size, int device, int fd);
  void countMemoryCall();
  // What CUDA's frees wait for: every queued gate (aborts past a limit).
  void waitForQueuedGates(const char* call);
  static constexpr int kGateWaitLimitSeconds = 30;
  // free() without the wait (IPC closes, which CUDA does not synchronize).
  void unmap(void* p);
  // CUDA's lazy loading: a kernel's first launch on a device loads it.
  Status loadOnFirstLaunch();
  // The op queue's worker on its stream's thread, and one op of it (as its
  // kernel would run it, checked as a launch would be).
  void runWorker(OpQueueShared& queue, int device);
  Status runQueued(const QueuedOp& op);
  std::atomic<bool> stopWorkers_{false};  // the device is going: workers leave
  // A misaligned operand's fault, kept: every later call returns it.
  Status checkAligned(std::initializer_list<const void*> operands, size_t elemSize, const char* what);
  Status sticky() const;
  Status notForked() const;
  Status sameDevice(int eventOrCurrent, DeviceStream s, const char* what);

  int devices_;
  std::vector<std::string> busIds_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Allocation>> allocations_;
  std::vector<std::unique_ptr<HostRange>> mapped_;
  std::vector<std::unique_ptr<Stream>> defaultStreams_;  // per device
  std::vector<Stream*> blocking_;                        // streams ordered with the legacy one
  std::shared_ptr<Latch> latch_;
  Counters counters_;
  int gatesHolding_ = 0;   // gates a stream has reached and waits at
  int gatesPending_ = 0;   // gates queued and not yet passed
  std::vector<char> kernelsLoaded_;  // per device
  std::vector<char> contexts_;       // per device: made yet
  Status sticky_;  // the context's sticky error (a misaligned kernel operand)
  const pid_t owner_ = getpid();  // the process that made (and used) the device
  bool peerAccess_ = true;
  std::set<std::pair<int, int>> peerEnabled_;  // (device, peer) pairs enablePeerAccess made
};

}  // namespace tutti
