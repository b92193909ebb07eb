// What device calls have beyond host calls, and nothing more: a stream of
// tutti's on the communicator's device, where every step's copy or
// reduction kernel runs (the device reducer), and device memory for a tree
// reduce's partial sums. Plans, connections and the executor are the host
// calls' own; the connections of device calls are stream-ordered.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/device/device_reducer.h"
#include "src/device/device_runtime.h"

namespace tutti {

class DeviceCalls {
 public:
  static Result<std::unique_ptr<DeviceCalls>> create(DeviceRuntime& runtime, int device);
  // Waits for the stream, then frees what it used.
  ~DeviceCalls();
  DeviceCalls(const DeviceCalls&) = delete;
  DeviceCalls& operator=(const DeviceCalls&) = delete;

  DeviceStream stream() const { return stream_; }
  const DeviceReducer& reducer() const { return reducer_; }
  // Device memory of at least `bytes`. Made outside the window in which a
  // gate holds a caller's stream (see reserved()); outgrown memory is kept,
  // not freed, since freeing waits for the whole device.
  Result<void*> scratch(size_t bytes);
  size_t scratchBytes() const { return scratchBytes_; }
  // Waits until the device has run every kernel queued so far; the first
  // launch error, or the stream's.
  Status finish();

  // Stream gates: a caller's stream waits, on the device, until the count
  // of this communicator's finished device batches reaches its batch's
  // ticket. Batches finish in the order of their tickets (one background
  // thread runs them), so the count only grows.
  uint32_t takeTicket() { return ++ticketsIssued_; }
  Status gate(DeviceStream s, uint32_t ticket) const { return runtime_.waitWordAsync(s, gateWord_, ticket); }
  void pass(uint32_t ticket) { __atomic_store_n(gateWord_, ticket, __ATOMIC_RELEASE); }

 private:
  DeviceCalls(DeviceRuntime& runtime, int device, DeviceStream stream, uint32_t* gateWord)
      : runtime_(runtime), device_(device), stream_(stream), reducer_(runtime, stream), gateWord_(gateWord) {}
  DeviceRuntime& runtime_;
  int device_;
  DeviceStream stream_;
  DeviceReducer reducer_;
  void* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  std::vector<void*> retired_;
  uint32_t* gateWord_;  // page-locked, mapped: see gateWord()
  uint32_t ticketsIssued_ = 0;
};

}  // namespace tutti
