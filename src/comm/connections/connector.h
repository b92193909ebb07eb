// Sets up connections in three phases so that many can be made at once, even
// between ranks that share a thread (a group over several communicators):
// every receiver listens and sends its handle, then every sender connects,
// then every receiver accepts. No phase waits on a later one. Connections
// for device calls come out stream-ordered on the endpoint's stream.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/bootstrap/exchange.h"
#include "src/comm/connections/connection_table.h"
#include "src/device/device_runtime.h"
#include "src/device/op_queue.h"
#include "transport/transport.h"

namespace tutti {

class Connector {
 public:
  struct Endpoint {
    Transport* transport = nullptr;
    Exchange* exchange = nullptr;
    ConnectionSpec spec;
    DeviceRuntime* runtime = nullptr;  // device calls: the device and its op queue
    OpQueue* deviceQueue = nullptr;
    MemoryTally* tally = nullptr;  // counts the slots of what is made
  };
  // The spec's connection id must be unique among the receiver's
  // connections; it is the exchange tag. A slot asked for twice is made once.
  void addRecv(const Endpoint& e, std::unique_ptr<RecvConnection>* slot);
  void addSend(const Endpoint& e, std::unique_ptr<SendConnection>* slot);
  bool empty() const { return recvs_.empty() && sends_.empty(); }

  Status listenAll();
  Status connectAll();
  Status acceptAll();
  // All three phases, for a single communicator.
  Status run();

 private:
  struct RecvJob {
    Endpoint e;
    std::unique_ptr<RecvConnection>* slot;
  };
  struct SendJob {
    Endpoint e;
    std::unique_ptr<SendConnection>* slot;
  };
  std::vector<RecvJob> recvs_;
  std::vector<SendJob> sends_;
};

}  // namespace tutti
