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

// Runs the case on comm; returns "" or a description of what was wrong.
std::string runCase(tuttiComm_t comm, int rank, int nranks, const Case& c);

}  // namespace tutti_test
