// Device buffers moved GPU to GPU: when every rank of a communicator is on
// one node and every pair of devices can address each other (the same GPU,
// or peers over NVLink or PCIe), collectives on device buffers run through
// the executor itself, with P2P connections (transport/p2p) and the device
// reducer on a stream of tutti's. Nothing is staged through host memory.
// Where P2P is impossible the communicator stages instead (device_staging.h).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "src/comm/communicator.h"
#include "src/comm/connection_table.h"
#include "src/device/device_reducer.h"
#include "src/exec/executor.h"
#include "transport/transport.h"

namespace tutti {

class DeviceDirect final : public Links {
 public:
  // Collective over comm's ranks: every rank calls it at init with the PCI
  // bus id of each rank's device (empty: host-only). Null on every rank
  // unless every pair can use P2P (and TUTTI_P2P_DISABLE is unset).
  static Result<std::unique_ptr<DeviceDirect>> create(Communicator& comm,
                                                      const std::vector<std::string>& busIds);
  ~DeviceDirect() override;

  // Connects the rings of every channel (at init, before any call holds a stream).
  Status connectRings();
  // Whether the connections and scratch the calls need exist. If not, the
  // caller makes them with reserve() on its own thread, with no earlier call
  // of the communicator left, before any gate holds a stream: connecting
  // waits for peers, and freeing device memory waits for the whole device.
  bool reserved(const std::vector<CollectiveArgs>& calls);
  struct Batch {
    DeviceDirect* direct;
    const std::vector<CollectiveArgs>* calls;
  };
  // Several communicators at once (a group), so ranks sharing a thread connect together.
  static Status reserve(const std::vector<Batch>& batches);
  // Runs the calls (their buffers on comm's device) together, blocking until
  // the results are in device memory.
  Status run(std::vector<CollectiveArgs>& calls);
  // Device memory for a tree reduce's partial sums at ranks other than the root.
  Result<void*> scratch(size_t bytes);

  // Links
  SendConnection* sendTo(int channel, int peer) override { return connections_.send(channel, peer); }
  RecvConnection* recvFrom(int channel, int peer) override { return connections_.recv(channel, peer); }
  std::string describePeer(int peer) const override;
  void notifyFailure(int failedRank) override;
  int reportedFailure(double graceSeconds) override { return connections_.reportedFailure(graceSeconds); }

 private:
  DeviceDirect(Communicator& comm, DeviceRuntime& runtime, DeviceStream stream);
  // Plans the calls into plans[0..calls.size()); returns the largest
  // tree-reduce scratch they need.
  size_t planCalls(const std::vector<CollectiveArgs>& calls, Plan* plans);

  Communicator& comm_;
  DeviceRuntime& runtime_;
  DeviceStream stream_;
  std::unique_ptr<Transport> p2p_;
  ConnectionTable connections_;
  LinkSet links_;  // connections_ over p2p_, in P2P-sized slots
  DeviceReducer reducer_;
  void* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  std::vector<void*> retired_;  // outgrown scratch, freed with the communicator
  std::deque<Plan> plans_;  // one per call of a run; a deque keeps their addresses
  std::vector<Work> works_;
  std::vector<Plan> checked_;  // reserved()'s plans, reused: a steady call allocates nothing
};

}  // namespace tutti
