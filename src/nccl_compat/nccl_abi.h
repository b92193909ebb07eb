// NCCL's ABI as libnccl.so.2 built from tutti presents it: the enum values
// and struct layouts a program compiled against NVIDIA's nccl.h passes in.
// Written from NCCL's documented interface; abi_check.cpp compares every
// value and offset with nccl.h at compile time where that header exists.
#pragma once

#include <climits>
#include <cstddef>

#include "tutti/tutti.h"

namespace tutti::nccl {

enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
  kNumResults = 8,
};

// Data types 0..9 are tutti's; the float8 pair has no tutti type.
enum NcclType : int {
  kFloat8e4m3 = 10,
  kFloat8e5m2 = 11,
  kNumTypes = 12,
};

// Ops 0..4 are tutti's; values from kNumOps up are made by
// ncclRedOpCreatePreMulSum.
enum NcclOp : int { kNumOps = 5, kMaxRedOp = 0x7fffffff };

enum ScalarResidence : int { kScalarDevice = 0, kScalarHostImmediate = 1 };

// ncclTeam_t (nccl_device/core.h): a strided set of ranks, passed by value.
struct Team {
  int nRanks, rank, stride;
};

constexpr int kUniqueIdBytes = 128;
struct UniqueId {
  char internal[kUniqueIdBytes];
};

constexpr int kConfigUndefInt = INT_MIN;
constexpr unsigned kConfigMagic = 0xcafebeef;

// ncclConfig_t as of NCCL 2.28. Older callers pass a shorter struct: its
// `size` says which fields exist.
struct Config {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
};

struct SimInfo {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
};

// tutti's codes below 8 equal NCCL's; tutti's timeout has no NCCL code, and
// a peer that stops answering is what NCCL calls a remote error.
inline Result fromTutti(tuttiResult_t r) {
  return r == tuttiTimeout ? kRemoteError : static_cast<Result>(r);
}

}  // namespace tutti::nccl
