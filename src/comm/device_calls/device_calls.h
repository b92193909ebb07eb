// What device calls have beyond host calls, and nothing more: a stream of
// tutti's on the communicator's device, where a worker kernel runs every
// step's copy and reduction (the op queue, which the device reducer feeds);
// the events that mark a batch's inputs; device memory for a tree reduce's
// partial sums. Plans, connections and the executor are the host calls'
// own; the connections of device calls are stream-ordered.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "src/device/device_reducer.h"
#include "src/device/device_runtime.h"
#include "src/device/op_queue.h"

namespace tutti {

class DeviceCalls {
 public:
  // `abort` ends the background thread's waits for the device, and one
  // that sees the device take no op for `timeoutSeconds` fails; `sharers`
  // ranks of this node use the device; `leanWorker`: TUTTI_DEVICE_WORKER=lean.
  static Result<std::unique_ptr<DeviceCalls>> create(DeviceRuntime& runtime, int device,
                                                     const std::atomic<bool>* abort, double timeoutSeconds,
                                                     int sharers, bool leanWorker = false);
  // Waits for the stream, then frees what it used.
  ~DeviceCalls();
  DeviceCalls(const DeviceCalls&) = delete;
  DeviceCalls& operator=(const DeviceCalls&) = delete;

  DeviceStream stream() const { return stream_; }
  OpQueue& queue() { return *queue_; }
  const DeviceReducer& reducer() const { return reducer_; }
  // Device memory of at least `bytes`. Made outside the window in which a
  // gate holds a caller's stream (see reserved()); outgrown memory is kept,
  // not freed, since freeing waits for the whole device.
  Result<void*> scratch(size_t bytes);
  size_t scratchBytes() const { return scratchBytes_; }
  // The background thread: waits until the worker ran every op posted; the
  // first that could not be posted or that the device refused.
  Status drain();
  // Waits until the stream is idle (no worker may be waiting for its stop).
  Status finish() { return runtime_.synchronize(stream_); }

  // Stream gates: a caller's stream waits, on the device, until the count
  // of this communicator's finished device batches reaches its batch's
  // ticket. Batches finish in the order of their tickets (one background
  // thread runs them), so the count only grows.
  uint32_t takeTicket() { return ++ticketsIssued_; }
  Status gate(DeviceStream s, uint32_t ticket) const { return runtime_.waitWordAsync(s, gateWord_, ticket); }
  void pass(uint32_t ticket) { __atomic_store_n(gateWord_, ticket, __ATOMIC_RELEASE); }

  // An event recorded on a caller's stream behind a batch's inputs. Events
  // are kept and recorded again, never destroyed while the communicator
  // lives: creating or destroying one waits while another thread copies to
  // pageable memory behind a gate (a rank hung so on an H200), and the
  // background thread that must open that gate gives them back. Recorded on
  // the caller's thread; given back from any.
  Result<DeviceEvent> recordInputsReady(DeviceStream s);
  void giveBack(DeviceEvent e);

 private:
  DeviceCalls(DeviceRuntime& runtime, int device, DeviceStream stream, std::unique_ptr<OpQueue> queue,
              uint32_t* gateWord)
      : runtime_(runtime), device_(device), stream_(stream), queue_(std::move(queue)), reducer_(*queue_),
        gateWord_(gateWord) {}
  DeviceRuntime& runtime_;
  int device_;
  DeviceStream stream_;
  std::unique_ptr<OpQueue> queue_;
  DeviceReducer reducer_;
  void* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  std::vector<void*> retired_;
  std::mutex eventsMutex_;
  std::vector<DeviceEvent> spareEvents_;
  uint32_t* gateWord_;  // page-locked, mapped: see gateWord()
  uint32_t ticketsIssued_ = 0;
};

}  // namespace tutti
