// Compile-time proof that nccl_abi.h matches NVIDIA's nccl.h: every enum
// value, struct size and field offset. Built only where nccl.h is found;
// a mismatch fails the build.
#include <nccl.h>

#include <cstddef>

#include "src/nccl_compat/nccl_abi.h"

namespace n = tutti::nccl;

#define SAME_VALUE(ours, theirs) static_assert(static_cast<int>(ours) == static_cast<int>(theirs), #theirs)
#define SAME_FIELD(field)                                                      \
  static_assert(offsetof(n::Config, field) == offsetof(ncclConfig_t, field) && \
                    sizeof(n::Config::field) == sizeof(ncclConfig_t::field),   \
                "ncclConfig_t::" #field)

SAME_VALUE(n::kSuccess, ncclSuccess);
SAME_VALUE(n::kUnhandledCudaError, ncclUnhandledCudaError);
SAME_VALUE(n::kSystemError, ncclSystemError);
SAME_VALUE(n::kInternalError, ncclInternalError);
SAME_VALUE(n::kInvalidArgument, ncclInvalidArgument);
SAME_VALUE(n::kInvalidUsage, ncclInvalidUsage);
SAME_VALUE(n::kRemoteError, ncclRemoteError);
SAME_VALUE(n::kInProgress, ncclInProgress);
SAME_VALUE(n::kNumResults, ncclNumResults);

// tutti's own types and ops are passed straight through.
SAME_VALUE(tuttiInt8, ncclInt8);
SAME_VALUE(tuttiUint8, ncclUint8);
SAME_VALUE(tuttiInt32, ncclInt32);
SAME_VALUE(tuttiUint32, ncclUint32);
SAME_VALUE(tuttiInt64, ncclInt64);
SAME_VALUE(tuttiUint64, ncclUint64);
SAME_VALUE(tuttiFloat16, ncclFloat16);
SAME_VALUE(tuttiFloat32, ncclFloat32);
SAME_VALUE(tuttiFloat64, ncclFloat64);
SAME_VALUE(tuttiBfloat16, ncclBfloat16);
SAME_VALUE(n::kFloat8e4m3, ncclFloat8e4m3);
SAME_VALUE(n::kFloat8e5m2, ncclFloat8e5m2);
SAME_VALUE(n::kNumTypes, ncclNumTypes);
SAME_VALUE(tuttiSum, ncclSum);
SAME_VALUE(tuttiProd, ncclProd);
SAME_VALUE(tuttiMax, ncclMax);
SAME_VALUE(tuttiMin, ncclMin);
SAME_VALUE(tuttiAvg, ncclAvg);
SAME_VALUE(n::kNumOps, ncclNumOps);
SAME_VALUE(n::kMaxRedOp, ncclMaxRedOp);
SAME_VALUE(n::kScalarDevice, ncclScalarDevice);
SAME_VALUE(n::kScalarHostImmediate, ncclScalarHostImmediate);
static_assert(sizeof(n::NcclOp) == sizeof(ncclRedOp_t), "ncclRedOp_t size");
static_assert(sizeof(n::NcclType) == sizeof(ncclDataType_t), "ncclDataType_t size");
static_assert(sizeof(n::Result) == sizeof(ncclResult_t), "ncclResult_t size");

SAME_VALUE(n::kUniqueIdBytes, NCCL_UNIQUE_ID_BYTES);
static_assert(sizeof(n::UniqueId) == sizeof(ncclUniqueId), "ncclUniqueId size");
static_assert(sizeof(tuttiUniqueId) == sizeof(ncclUniqueId), "tutti's id carries NCCL's");
SAME_VALUE(n::kConfigUndefInt, NCCL_CONFIG_UNDEF_INT);
SAME_VALUE(TUTTI_SPLIT_NOCOLOR, NCCL_SPLIT_NOCOLOR);

static_assert(sizeof(n::Config) == sizeof(ncclConfig_t), "ncclConfig_t size");
SAME_FIELD(size);
SAME_FIELD(magic);
SAME_FIELD(version);
SAME_FIELD(blocking);
SAME_FIELD(cgaClusterSize);
SAME_FIELD(minCTAs);
SAME_FIELD(maxCTAs);
SAME_FIELD(netName);
SAME_FIELD(splitShare);
SAME_FIELD(trafficClass);
SAME_FIELD(commName);
SAME_FIELD(collnetEnable);
SAME_FIELD(CTAPolicy);
SAME_FIELD(shrinkShare);
SAME_FIELD(nvlsCTAs);
SAME_FIELD(nChannelsPerNetPeer);
SAME_FIELD(nvlinkCentricSched);
constexpr ncclConfig_t kNvidiaInitializer = NCCL_CONFIG_INITIALIZER;
static_assert(n::kConfigMagic == kNvidiaInitializer.magic, "config magic");

static_assert(sizeof(n::SimInfo) == sizeof(ncclSimInfo_t) &&
                  offsetof(n::SimInfo, estimatedTime) == offsetof(ncclSimInfo_t, estimatedTime),
              "ncclSimInfo_t layout");
