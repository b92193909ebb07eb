// One collective call with real buffers, checked element by element against
// the independent reference. Used by the multi-process collective tests.
#pragma once

#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti_test {

enum class Coll { kAllReduce, kReduce, kReduceScatter, kAllGather, kBroadcast, kSendRecv, kAllToAll };
const char* collLabel(Coll c);

struct Case {
  Coll coll;
  tuttiDataType_t type;
  tuttiRedOp_t op;
  size_t count;  // allgather: per-rank send count; reducescatter: per-rank receive count
  bool inPlace;
  int root;
  uint64_t seed;
};

// Device memory for runCase: buffers the test reaches only by copies, and
// the stream the calls are queued on.
class CaseDevice {
 public:
  virtual ~CaseDevice() = default;
  // Buffer `which` (0: input, 1: output) of at least `bytes`, reused.
  virtual void* buffer(int which, size_t bytes) = 0;
  virtual void upload(void* device, const void* host, size_t bytes) = 0;
  virtual void download(void* host, const void* device, size_t bytes) = 0;
  virtual void* stream() = 0;
  // Waits for the stream; "" or what failed.
  virtual std::string synchronize() = 0;
};

// Runs the case on comm, with host buffers or (device given) device buffers
// on its stream; returns "" or a description of what was wrong.
std::string runCase(tuttiComm_t comm, int rank, int nranks, const Case& c,
                    CaseDevice* device = nullptr);

// Every collective x dtype x op (ops only where they reduce) x count, in and
// out of place, root the last rank; stops at the first wrong case.
std::string runEveryCase(tuttiComm_t comm, int rank, int nranks, const std::vector<size_t>& counts,
                         CaseDevice* device, uint64_t seed);

}  // namespace tutti_test
