// An emulated CUDA device for machines without a GPU: it lets the
// stream-ordered paths run for real. Device memory sits at addresses that are
// not mapped in the process (its bytes live elsewhere), so any host access
// to it by tutti crashes the test instead of passing; only the runtime's
// copies reach it. Each stream is an in-order thread; events and host
// functions run there, as on a GPU.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/device/device_runtime.h"

namespace tutti_test {

class FakeDevice final : public tutti::DeviceRuntime {
 public:
  explicit FakeDevice(int devices = 1, std::vector<std::string> busIds = {});
  ~FakeDevice() override;

  // Device memory on `device`, and copies to and from it for the test.
  void* alloc(size_t bytes, int device = 0);
  void free(void* p);
  void upload(void* device, const void* host, size_t bytes);
  void download(void* host, const void* device, size_t bytes);
  // Holds the stream at this point until release(): the test sees what a
  // call does before its stream gets there.
  void hold(tutti::DeviceStream s);
  void release();
  // Host functions run so far on any stream (gates included).
  int hostFunctionsRun() const;
  // What tutti asked for so far: page-locked buffers (staging) and device
  // memory mapped from another process (P2P over IPC).
  int pinnedAllocations() const;
  int ipcOpens() const;
  // tutti's device allocations, frees and IPC maps made while a host
  // function (a gate) held a stream: on a GPU a free then waits for the
  // gate, which waits for the collective, which waits for the free.
  int memoryCallsWhileStreamHeld() const;
  // Whether distinct devices may address each other (default yes): no
  // peer access makes tutti stage device buffers instead.
  void setPeerAccess(bool allowed) { peerAccess_ = allowed; }

  const char* name() const override { return "emulated"; }
  int deviceCount() override { return devices_; }
  std::string unavailableReason() override { return ""; }
  tutti::Result<int> currentDevice() override;
  tutti::Status setDevice(int device) override;
  tutti::Result<std::string> pciBusId(int device) override;
  tutti::PointerInfo pointerInfo(const void* p) override;
  tutti::Result<tutti::DeviceStream> createStream() override;
  void destroyStream(tutti::DeviceStream s) override;
  tutti::Result<tutti::DeviceEvent> recordEvent(tutti::DeviceStream s) override;
  tutti::Status waitEvent(tutti::DeviceEvent e) override;
  void destroyEvent(tutti::DeviceEvent e) override;
  tutti::Status synchronize(tutti::DeviceStream s) override;
  tutti::Status launchHostFunc(tutti::DeviceStream s, void (*fn)(void*), void* arg) override;
  tutti::Result<void*> allocPinned(size_t bytes) override;
  void freePinned(void* p) override;
  tutti::Status copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch,
                            size_t width, size_t rows, tutti::DeviceStream s) override;
  tutti::Result<tutti::DeviceEvent> createEvent() override;
  tutti::Status recordInto(tutti::DeviceEvent e, tutti::DeviceStream s) override;
  tutti::Result<bool> eventDone(tutti::DeviceEvent e) override;
  tutti::Result<void*> allocDevice(size_t bytes) override;
  void freeDevice(void* p) override;
  tutti::Status reduceAsync(void* dst, const void* a, const void* b, size_t count,
                            tutti::DataType dtype, tutti::RedOp op, int divisor,
                            tutti::DeviceStream s) override;
  tutti::Status divideAsync(void* dst, const void* src, size_t count, tutti::DataType dtype,
                            int divisor, tutti::DeviceStream s) override;
  tutti::Result<int> deviceByBusId(const std::string& busId) override;
  bool canAccessPeer(int device, int peer) override { return device == peer || peerAccess_; }
  tutti::Status enablePeerAccess(int peer) override;
  // IPC: the allocation's memory is a memfd the other process opens
  // through /proc, mapped at a fresh unreadable address there.
  tutti::Result<tutti::DeviceIpcHandle> exportMemory(void* p) override;
  tutti::Result<void*> openMemory(const tutti::DeviceIpcHandle& handle) override;
  void closeMemory(void* p) override { freeDevice(p); }

 private:
  struct Allocation;
  struct Stream;
  struct Latch;
  Stream& streamOf(tutti::DeviceStream s);
  // Where a pointer's bytes really are (device addresses are translated).
  void* backing(const void* p);
  // Registers shared `bytes` (a memfd's mapping) behind a fresh unreadable address.
  void* addAllocation(char* bytes, size_t size, int device, int fd);
  void countMemoryCall();

  int devices_;
  std::vector<std::string> busIds_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Allocation>> allocations_;
  std::unique_ptr<Stream> defaultStream_;
  std::shared_ptr<Latch> latch_;
  int hostFunctions_ = 0;
  int pinnedAllocations_ = 0;
  int ipcOpens_ = 0;
  int hostFunctionsRunning_ = 0;
  int memoryCallsWhileStreamHeld_ = 0;
  bool peerAccess_ = true;
};

}  // namespace tutti_test
