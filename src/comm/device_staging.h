// Device buffers that no P2P path reaches are staged through page-locked host
// memory: copied in on tutti's own stream, combined by the host collective
// over shared memory or the network, copied back. A single call is cut into
// pieces of TUTTI_STAGING_BYTES so that copying one piece in and the previous
// one out overlaps the collective of the current one; a group is staged whole.
// Every rank cuts alike (the size is checked at init), so pieces match.
#pragma once

#include <vector>

#include "src/comm/communicator.h"
#include "src/device/device_runtime.h"

namespace tutti {

// How a collective's buffer is laid out around `count`: `rows` runs of
// `count` elements each, `pitch` elements apart (gathered and scattered
// buffers hold one row per rank).
struct BufferRows {
  size_t rows = 1;
  size_t pitch = 0;
};
BufferRows inputRows(Collective c, int nranks, size_t count);
BufferRows outputRows(Collective c, int nranks, size_t count);

class DeviceStaging {
 public:
  DeviceStaging(DeviceRuntime& runtime, size_t pieceBytes);
  ~DeviceStaging();
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;

  // Page-locked memory is allocated and freed outside the window in which
  // a gate holds a caller's stream (freeing may wait for the whole device):
  // on the caller's thread, with no earlier call of this communicator left.
  bool reserved(const std::vector<CollectiveArgs>& calls, int nranks) const;
  Status reserve(const std::vector<CollectiveArgs>& calls, int nranks);

  // Runs the calls on comm (their buffers on the device), blocking until the
  // results are back in device memory. One call is pipelined in pieces.
  Status run(Communicator& comm, std::vector<CollectiveArgs>& calls);

 private:
  struct Pinned {
    void* data = nullptr;
    size_t bytes = 0;
  };
  Status runPipelined(Communicator& comm, const CollectiveArgs& call);
  Status runWhole(Communicator& comm, std::vector<CollectiveArgs>& calls);
  Status ensure(Pinned& buffer, size_t bytes);
  // Elements per piece of a pipelined call, and the bytes of one stage.
  size_t pieceElems(const CollectiveArgs& call, int nranks) const;
  size_t stageBytes(const CollectiveArgs& call, int nranks) const;
  // Copies piece [offset, offset + n) of the call's input into `stage`, or
  // the staged output back (rows of the piece, packed in the stage).
  Status copyIn(const CollectiveArgs& call, int nranks, size_t offset, size_t n, void* stage);
  Status copyOut(const CollectiveArgs& call, int nranks, size_t offset, size_t n, const void* stage);

  DeviceRuntime& runtime_;
  size_t pieceBytes_;
  DeviceStream stream_ = nullptr;
  bool haveStream_ = false;
  DeviceEvent inReady_[2] = {nullptr, nullptr};  // a piece's input is staged (recorded again per piece)
  Pinned in_[2], out_[2];  // double-buffered pieces, communicator lifetime
  Pinned arena_;           // groups: every call's input and output, whole
};

}  // namespace tutti
