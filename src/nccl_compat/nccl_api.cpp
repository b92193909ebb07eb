// libnccl.so.2: NCCL's C API over tutti, for programs and frameworks built
// against NVIDIA's nccl.h. Types and results pass through (nccl_abi.h, checked
// against nccl.h); what tutti lacks (float8, windows, device allocation)
// returns ncclInvalidUsage with a message in ncclGetLastError.
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "src/common/log.h"
#include "src/nccl_compat/nccl_abi.h"
#include "src/nccl_compat/premul_sum.h"

using namespace tutti;
using namespace tutti::nccl;

struct ncclComm {
  // Checked before anything else is read, as NCCL checks its own handles: a
  // stray pointer is refused, not used. Cleared when the handle is freed.
  uint64_t magic = kMagic;
  static constexpr uint64_t kMagic = 0x74757474692d6e63ull;  // "tutti-nc"
  ~ncclComm() { *const_cast<volatile uint64_t*>(&magic) = 0; }
  tuttiComm_t tutti = nullptr;
  bool blocking = true;
  std::mutex mutex;
  std::vector<PreMulSum> preMulSums;  // op kNumOps + i
  // Scaled inputs of background calls: freed once the comm reports done.
  std::vector<std::shared_ptr<void>> inFlight;
};

namespace {

thread_local std::string tCompatError;  // this layer's last error ("" when tutti's applies)
thread_local int tGroupDepth = 0;
thread_local std::vector<std::shared_ptr<void>> tGroupTemps;  // live until the group ends

bool isComm(const ncclComm* comm) { return comm && comm->magic == ncclComm::kMagic; }

// " (rank r)" once comm is initialized, so refusals say which rank.
std::string rankOf(ncclComm* comm) {
  tuttiResult_t state = tuttiInProgress;
  int rank = -1;
  if (!isComm(comm) || tuttiCommGetAsyncError(comm->tutti, &state) != tuttiSuccess || state == tuttiInProgress ||
      tuttiCommUserRank(comm->tutti, &rank) != tuttiSuccess)
    return "";
  return " (rank " + std::to_string(rank) + ")";
}

Result refuse(Result code, const std::string& call, const std::string& why, ncclComm* comm = nullptr) {
  tCompatError = call + rankOf(comm) + ": " + why;
  TUTTI_WARN(kSubsysAll, "%s", tCompatError.c_str());
  return code;
}

Result forward(tuttiResult_t r) {
  if (r != tuttiSuccess && r != tuttiInProgress) tCompatError.clear();
  return fromTutti(r);
}

Result checkComm(const ncclComm* comm, const char* call) {
  if (!comm) return refuse(kInvalidArgument, call, "comm is NULL");
  if (!isComm(comm))
    return refuse(kInvalidArgument, call, "comm is not a communicator (no handle magic word: "
                                          "uninitialized, destroyed or corrupted?)");
  return kSuccess;
}

Result checkType(int datatype, const char* call, ncclComm* comm) {
  if (datatype == kFloat8e4m3 || datatype == kFloat8e5m2)
    return refuse(kInvalidUsage, call, "float8 types are not supported by tutti", comm);
  return kSuccess;  // tutti checks the rest and names the value
}

tuttiConfig_t fromNcclConfig(const Config* c) {
  tuttiConfig_t t = TUTTI_CONFIG_INITIALIZER;
  if (c->blocking != kConfigUndefInt) t.blocking = c->blocking;
  if (c->size >= offsetof(Config, commName) + sizeof(c->commName) && c->commName) t.commName = c->commName;
  return t;
}

Result checkConfig(const Config* c, const char* call) {
  if (c && (c->magic != kConfigMagic || c->size < offsetof(Config, blocking) + sizeof(int)))
    return refuse(kInvalidArgument, call, "config was not initialized with NCCL_CONFIG_INITIALIZER");
  return kSuccess;
}

ncclComm* wrap(tuttiComm_t t, bool blocking) {
  if (!t) return nullptr;
  auto* c = new ncclComm;
  c->tutti = t;
  c->blocking = blocking;
  return c;
}

// Keeps a scaled input alive until the call that reads it has run.
void keepUntilDone(ncclComm* comm, std::shared_ptr<void> temp) {
  if (!comm->blocking) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->inFlight.push_back(std::move(temp));
  } else if (tGroupDepth > 0) {
    tGroupTemps.push_back(std::move(temp));
  }  // else: a blocking call outside a group is done when it returns
}

// Resolves `op` for a call: built-in ops pass; a pre-multiplied sum scales
// `input` into a temporary and becomes a sum over it.
Result resolveOp(ncclComm* comm, int* op, const void** input, size_t count, int datatype,
                 std::shared_ptr<std::vector<unsigned char>>* temp, const char* call) {
  if (*op < kNumOps) return kSuccess;
  PreMulSum p;
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    size_t i = static_cast<size_t>(*op - kNumOps);
    if (i >= comm->preMulSums.size() || !comm->preMulSums[i].live)
      return refuse(kInvalidArgument, call, "op " + std::to_string(*op) +
                                                " was not made by ncclRedOpCreatePreMulSum on this comm",
                    comm);
    p = comm->preMulSums[i];
  }
  if (p.dtype != datatype)
    return refuse(kInvalidArgument, call, "the op's scalar type differs from the call's datatype", comm);
  *temp = scaledCopy(*input, count, datatype, p.factor());
  *input = (*temp)->data();
  *op = tuttiSum;
  return kSuccess;
}

// What every reduction does first: check comm and type, and turn a
// pre-multiplied sum into a sum over a scaled copy (`temp`, which the caller
// holds through the call; background and grouped calls keep it longer).
Result prepareReduction(ncclComm* comm, int datatype, int* op, const void** input, size_t elements,
                        std::shared_ptr<std::vector<unsigned char>>* temp, const char* call) {
  if (Result r = checkComm(comm, call)) return r;
  if (Result r = checkType(datatype, call, comm)) return r;
  if (Result r = resolveOp(comm, op, input, elements, datatype, temp, call)) return r;
  if (*temp) keepUntilDone(comm, *temp);
  return kSuccess;
}

int commSize(ncclComm* comm) {
  int n = 0;
  tuttiCommCount(comm->tutti, &n);
  return n;
}

}  // namespace

extern "C" {

// ----------------------------------------------------------- versions, errors

Result ncclGetVersion(int* version) {
  if (!version) return refuse(kInvalidArgument, "ncclGetVersion", "version is NULL");
  *version = TUTTI_NCCL_VERSION_CODE;
  return kSuccess;
}

const char* ncclGetErrorString(Result result) {
  switch (result) {
    case kSuccess: return "no error";
    case kUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case kSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case kInternalError: return "internal error - please report this issue to the NCCL developers";
    case kInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case kInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case kRemoteError: return "remote process exited or there was a network error";
    case kInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm* comm) {
  if (!tCompatError.empty()) return tCompatError.c_str();
  return tuttiGetLastError(isComm(comm) ? comm->tutti : nullptr);
}

// ----------------------------------------------------------------- life cycle

Result ncclGetUniqueId(UniqueId* uniqueId) {
  if (!uniqueId) return refuse(kInvalidArgument, "ncclGetUniqueId", "uniqueId is NULL");
  return forward(tuttiGetUniqueId(reinterpret_cast<tuttiUniqueId*>(uniqueId)));
}

Result ncclCommInitRankConfig(ncclComm** comm, int nranks, UniqueId commId, int rank, Config* config) {
  const char* call = "ncclCommInitRankConfig";
  if (!comm) return refuse(kInvalidArgument, call, "comm is NULL");
  if (Result r = checkConfig(config, call)) return r;
  tuttiConfig_t tc = TUTTI_CONFIG_INITIALIZER;
  if (config) tc = fromNcclConfig(config);
  tuttiUniqueId id;
  std::memcpy(&id, &commId, sizeof id);
  tuttiComm_t t = nullptr;
  Result r = forward(tuttiCommInitRankConfig(&t, nranks, id, rank, &tc));
  *comm = wrap(t, tc.blocking == 1);
  return r;
}

Result ncclCommInitRank(ncclComm** comm, int nranks, UniqueId commId, int rank) {
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

Result ncclCommInitRankScalable(ncclComm** comm, int nranks, int rank, int nId, UniqueId* commIds,
                                Config* config) {
  // tutti's rendezvous is one root: the first id serves every rank.
  if (nId < 1 || !commIds)
    return refuse(kInvalidArgument, "ncclCommInitRankScalable", "needs at least one unique id");
  return ncclCommInitRankConfig(comm, nranks, commIds[0], rank, config);
}

Result ncclCommInitAll(ncclComm** comms, int ndev, const int* devlist) {
  if (!comms) return refuse(kInvalidArgument, "ncclCommInitAll", "comms is NULL");
  if (ndev < 1) return refuse(kInvalidArgument, "ncclCommInitAll", "ndev must be >= 1");
  std::vector<tuttiComm_t> t(ndev, nullptr);
  Result r = forward(tuttiCommInitAll(t.data(), ndev, devlist));
  for (int i = 0; i < ndev; ++i) comms[i] = r == kSuccess ? wrap(t[i], true) : nullptr;
  return r;
}

// A split's or shrink's config: `config`, blocking as the parent where it does not say.
tuttiConfig_t childConfig(const ncclComm* comm, const Config* config) {
  tuttiConfig_t tc = TUTTI_CONFIG_INITIALIZER;
  tc.blocking = comm->blocking;
  if (config) {
    tc = fromNcclConfig(config);
    if (config->blocking == kConfigUndefInt) tc.blocking = comm->blocking;  // inherit
  }
  return tc;
}

Result ncclCommSplit(ncclComm* comm, int color, int key, ncclComm** newcomm, Config* config) {
  const char* call = "ncclCommSplit";
  if (Result r = checkComm(comm, call)) return r;
  if (!newcomm) return refuse(kInvalidArgument, call, "newcomm is NULL");
  if (Result r = checkConfig(config, call)) return r;
  tuttiConfig_t tc = childConfig(comm, config);
  tuttiComm_t child = nullptr;
  Result r = forward(tuttiCommSplit(comm->tutti, color, key, &child, &tc));
  *newcomm = wrap(child, tc.blocking == 1);
  return r;
}

// NCCL_SHRINK_ABORT is TUTTI_SHRINK_ABORT; NCCL knows no other flag.
Result ncclCommShrink(ncclComm* comm, int* excludeRanksList, int excludeRanksCount, ncclComm** newcomm,
                      Config* config, int shrinkFlags) {
  const char* call = "ncclCommShrink";
  if (Result r = checkComm(comm, call)) return r;
  if (!newcomm) return refuse(kInvalidArgument, call, "newcomm is NULL");
  *newcomm = nullptr;
  if (shrinkFlags & ~TUTTI_SHRINK_ABORT)
    return refuse(kInvalidArgument, call,
                  "shrinkFlags " + std::to_string(shrinkFlags) + " is neither NCCL_SHRINK_DEFAULT nor NCCL_SHRINK_ABORT");
  if (Result r = checkConfig(config, call)) return r;
  tuttiConfig_t tc = childConfig(comm, config);
  tuttiComm_t child = nullptr;
  Result r = forward(tuttiCommShrink(comm->tutti, excludeRanksList, excludeRanksCount, &child, &tc, shrinkFlags));
  *newcomm = wrap(child, tc.blocking == 1);
  return r;
}

// NCCL 2.29's grow, declared here as nccl.h 2.29 does (CUDA's nccl.h is older).
Result ncclCommGetUniqueId(ncclComm* comm, UniqueId* uniqueId) {
  const char* call = "ncclCommGetUniqueId";
  if (Result r = checkComm(comm, call)) return r;
  if (!uniqueId) return refuse(kInvalidArgument, call, "uniqueId is NULL");
  return forward(tuttiCommGetUniqueId(comm->tutti, reinterpret_cast<tuttiUniqueId*>(uniqueId)));
}

Result ncclCommGrow(ncclComm* comm, int nRanks, const UniqueId* uniqueId, int rank, ncclComm** newcomm,
                    Config* config) {
  const char* call = "ncclCommGrow";
  if (comm)
    if (Result r = checkComm(comm, call)) return r;
  if (!newcomm) return refuse(kInvalidArgument, call, "newcomm is NULL");
  *newcomm = nullptr;
  if (Result r = checkConfig(config, call)) return r;
  tuttiConfig_t tc = TUTTI_CONFIG_INITIALIZER;
  if (comm) tc = childConfig(comm, config);
  else if (config) tc = fromNcclConfig(config);
  tuttiComm_t child = nullptr;
  Result r = forward(tuttiCommGrow(comm ? comm->tutti : nullptr, nRanks,
                                   reinterpret_cast<const tuttiUniqueId*>(uniqueId), rank, &child, &tc));
  *newcomm = wrap(child, tc.blocking == 1);
  return r;
}

Result ncclCommRevoke(ncclComm* comm, int revokeFlags) {
  if (Result r = checkComm(comm, "ncclCommRevoke")) return r;
  return forward(tuttiCommRevoke(comm->tutti, revokeFlags));
}

Result ncclCommFinalize(ncclComm* comm) {
  if (Result r = checkComm(comm, "ncclCommFinalize")) return r;
  return forward(tuttiCommFinalize(comm->tutti));
}

Result ncclCommDestroy(ncclComm* comm) {
  if (!comm) return kSuccess;  // as NCCL: NULL is a no-op
  if (Result r = checkComm(comm, "ncclCommDestroy")) return r;
  Result r = forward(tuttiCommDestroy(comm->tutti));
  delete comm;
  return r;
}

Result ncclCommAbort(ncclComm* comm) {
  if (!comm) return kSuccess;  // as NCCL: NULL is a no-op
  if (Result r = checkComm(comm, "ncclCommAbort")) return r;
  Result r = forward(tuttiCommAbort(comm->tutti));
  delete comm;
  return r;
}

Result ncclCommGetAsyncError(ncclComm* comm, Result* asyncError) {
  if (Result r = checkComm(comm, "ncclCommGetAsyncError")) return r;
  if (!asyncError) return refuse(kInvalidArgument, "ncclCommGetAsyncError", "asyncError is NULL");
  tuttiResult_t state = tuttiSuccess;
  Result r = forward(tuttiCommGetAsyncError(comm->tutti, &state));
  *asyncError = fromTutti(state);
  if (state != tuttiInProgress) {  // nothing runs in the background any more
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->inFlight.clear();
  }
  return r;
}

Result ncclCommCount(const ncclComm* comm, int* count) {
  if (Result r = checkComm(comm, "ncclCommCount")) return r;
  return forward(tuttiCommCount(comm->tutti, count));
}

Result ncclCommUserRank(const ncclComm* comm, int* rank) {
  if (Result r = checkComm(comm, "ncclCommUserRank")) return r;
  return forward(tuttiCommUserRank(comm->tutti, rank));
}

Result ncclCommCuDevice(const ncclComm* comm, int* device) {
  if (Result r = checkComm(comm, "ncclCommCuDevice")) return r;
  if (!device) return refuse(kInvalidArgument, "ncclCommCuDevice", "device is NULL");
  return forward(tuttiCommCuDevice(comm->tutti, device));
}

// ----------------------------------------------------- memory and registration

// Device memory from tutti's runtime (CUDA, or the emulated device).
Result ncclMemAlloc(void** ptr, size_t size) {
  tuttiResult_t r = tuttiMemAlloc(ptr, size);
  return r == tuttiSuccess ? kSuccess : refuse(fromTutti(r), "ncclMemAlloc", tuttiGetLastError(nullptr));
}

Result ncclMemFree(void* ptr) {
  tuttiResult_t r = tuttiMemFree(ptr);
  return r == tuttiSuccess ? kSuccess : refuse(fromTutti(r), "ncclMemFree", tuttiGetLastError(nullptr));
}

// Registration is a hint in NCCL; tutti copies host buffers through its own
// registered rings, so a handle is all a caller needs back.
struct Registration {
  void* buffer;
  size_t size;
};

Result ncclCommRegister(const ncclComm* comm, void* buff, size_t size, void** handle) {
  if (Result r = checkComm(comm, "ncclCommRegister")) return r;
  if (!handle) return refuse(kInvalidArgument, "ncclCommRegister", "handle is NULL");
  *handle = new Registration{buff, size};
  return kSuccess;
}

Result ncclCommDeregister(const ncclComm* comm, void* handle) {
  if (Result r = checkComm(comm, "ncclCommDeregister")) return r;
  if (!handle) return refuse(kInvalidArgument, "ncclCommDeregister", "handle is NULL");
  delete static_cast<Registration*>(handle);
  return kSuccess;
}

Result ncclCommWindowRegister(ncclComm*, void*, size_t, void** win, int) {
  if (win) *win = nullptr;
  return refuse(kInvalidUsage, "ncclCommWindowRegister", "symmetric memory windows are not supported by tutti");
}

Result ncclCommWindowDeregister(ncclComm*, void*) {
  return refuse(kInvalidUsage, "ncclCommWindowDeregister", "symmetric memory windows are not supported by tutti");
}

// ------------------------------------------ NCCL 2.28's device API (host side)
// nccl_device.h's kernels run inside NCCL's own communicator; tutti has none
// to give, so creating one is refused. The teams are plain rank arithmetic:
// the world, and this rank alone as the load/store-accessible team. PyTorch
// 2.11's libtorch_cuda.so links these names, so they must exist.

Result ncclDevCommCreate(ncclComm* comm, const void*, void*) {
  return refuse(kInvalidUsage, "ncclDevCommCreate", "NCCL's device API (nccl_device.h) is not supported by tutti", comm);
}
Result ncclDevCommDestroy(ncclComm* comm, const void*) {
  return refuse(kInvalidUsage, "ncclDevCommDestroy", "NCCL's device API (nccl_device.h) is not supported by tutti", comm);
}
Result ncclLsaBarrierCreateRequirement(Team, int, void*, void*) {
  return refuse(kInvalidUsage, "ncclLsaBarrierCreateRequirement", "NCCL's device API is not supported by tutti");
}
Result ncclGinBarrierCreateRequirement(ncclComm* comm, Team, int, void*, void*) {
  return refuse(kInvalidUsage, "ncclGinBarrierCreateRequirement", "NCCL's device API is not supported by tutti", comm);
}
Result ncclLLA2ACreateRequirement(int, int, void*, void*) {
  return refuse(kInvalidUsage, "ncclLLA2ACreateRequirement", "NCCL's device API is not supported by tutti");
}
int ncclLLA2ACalcSlots(int, int) { return 0; }  // no slots: nothing of the device API is served

Team ncclTeamWorld(ncclComm* comm) {
  int n = 0, rank = 0;
  if (isComm(comm)) {
    tuttiCommCount(comm->tutti, &n);
    tuttiCommUserRank(comm->tutti, &rank);
  }
  return {n, rank, 1};
}
Team ncclTeamLsa(ncclComm*) { return {1, 0, 1}; }
Team ncclTeamRail(ncclComm* comm) { return ncclTeamWorld(comm); }  // one rank per LSA team: the world
int ncclTeamRankToWorld(ncclComm* comm, Team team, int rank) {
  return ncclTeamWorld(comm).rank + (rank - team.rank) * team.stride;
}
int ncclTeamRankToLsa(ncclComm* comm, Team team, int rank) {
  return ncclTeamRankToWorld(comm, team, rank) == ncclTeamWorld(comm).rank ? 0 : -1;
}
void ncclResetDebugInit() {}
void ncclResetDebugInitInternal() {}  // NVIDIA's library exports it: a program may name it

// ---------------------------------------------------------------- custom ops

Result ncclRedOpCreatePreMulSum(int* op, void* scalar, int datatype, ScalarResidence residence,
                                ncclComm* comm) {
  const char* call = "ncclRedOpCreatePreMulSum";
  if (Result r = checkComm(comm, call)) return r;
  if (!op || !scalar) return refuse(kInvalidArgument, call, "op or scalar is NULL");
  if (Result r = checkType(datatype, call, comm)) return r;
  if (datatype < 0 || datatype >= tuttiNumTypes)
    return refuse(kInvalidArgument, call, "invalid datatype " + std::to_string(datatype));
  if (residence != kScalarDevice && residence != kScalarHostImmediate)
    return refuse(kInvalidArgument, call, "invalid scalar residence " + std::to_string(residence));
  PreMulSum p;
  p.live = true;
  p.dtype = datatype;
  p.residence = residence;
  // A device scalar is read at each call; tutti's buffers are host memory.
  if (residence == kScalarHostImmediate) {
    const auto* bytes = static_cast<const unsigned char*>(scalar);
    p.immediate.assign(bytes, bytes + 8);
  } else {
    p.pointer = scalar;
  }
  std::lock_guard<std::mutex> lock(comm->mutex);
  size_t slot = 0;
  while (slot < comm->preMulSums.size() && comm->preMulSums[slot].live) ++slot;
  if (slot == comm->preMulSums.size()) comm->preMulSums.emplace_back();
  comm->preMulSums[slot] = std::move(p);
  *op = kNumOps + static_cast<int>(slot);
  return kSuccess;
}

Result ncclRedOpDestroy(int op, ncclComm* comm) {
  const char* call = "ncclRedOpDestroy";
  if (Result r = checkComm(comm, call)) return r;
  std::lock_guard<std::mutex> lock(comm->mutex);
  size_t i = static_cast<size_t>(op - kNumOps);
  if (op < kNumOps || i >= comm->preMulSums.size() || !comm->preMulSums[i].live)
    return refuse(kInvalidArgument, call, "op " + std::to_string(op) + " is not a live custom op of this comm",
                  comm);
  comm->preMulSums[i].live = false;
  return kSuccess;
}

// --------------------------------------------------------------- collectives

Result ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op,
                     ncclComm* comm, void* stream) {
  std::shared_ptr<std::vector<unsigned char>> temp;
  if (Result r = prepareReduction(comm, datatype, &op, &sendbuff, count, &temp, "ncclAllReduce")) return r;
  return forward(tuttiAllReduce(sendbuff, recvbuff, count, static_cast<tuttiDataType_t>(datatype),
                                static_cast<tuttiRedOp_t>(op), comm->tutti, stream));
}

Result ncclReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op, int root,
                  ncclComm* comm, void* stream) {
  std::shared_ptr<std::vector<unsigned char>> temp;
  if (Result r = prepareReduction(comm, datatype, &op, &sendbuff, count, &temp, "ncclReduce")) return r;
  return forward(tuttiReduce(sendbuff, recvbuff, count, static_cast<tuttiDataType_t>(datatype),
                             static_cast<tuttiRedOp_t>(op), root, comm->tutti, stream));
}

Result ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, int datatype, int op,
                         ncclComm* comm, void* stream) {
  size_t total = comm ? recvcount * static_cast<size_t>(commSize(comm)) : 0;
  std::shared_ptr<std::vector<unsigned char>> temp;
  if (Result r = prepareReduction(comm, datatype, &op, &sendbuff, total, &temp, "ncclReduceScatter")) return r;
  return forward(tuttiReduceScatter(sendbuff, recvbuff, recvcount, static_cast<tuttiDataType_t>(datatype),
                                    static_cast<tuttiRedOp_t>(op), comm->tutti, stream));
}

Result ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, int datatype,
                     ncclComm* comm, void* stream) {
  if (Result r = checkComm(comm, "ncclAllGather")) return r;
  if (Result r = checkType(datatype, "ncclAllGather", comm)) return r;
  return forward(tuttiAllGather(sendbuff, recvbuff, sendcount, static_cast<tuttiDataType_t>(datatype),
                                comm->tutti, stream));
}

Result ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, int datatype, int root,
                     ncclComm* comm, void* stream) {
  if (Result r = checkComm(comm, "ncclBroadcast")) return r;
  if (Result r = checkType(datatype, "ncclBroadcast", comm)) return r;
  return forward(tuttiBroadcast(sendbuff, recvbuff, count, static_cast<tuttiDataType_t>(datatype), root,
                                comm->tutti, stream));
}

Result ncclBcast(void* buff, size_t count, int datatype, int root, ncclComm* comm, void* stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

Result ncclSend(const void* sendbuff, size_t count, int datatype, int peer, ncclComm* comm, void* stream) {
  if (Result r = checkComm(comm, "ncclSend")) return r;
  if (Result r = checkType(datatype, "ncclSend", comm)) return r;
  return forward(tuttiSend(sendbuff, count, static_cast<tuttiDataType_t>(datatype), peer, comm->tutti, stream));
}

Result ncclRecv(void* recvbuff, size_t count, int datatype, int peer, ncclComm* comm, void* stream) {
  if (Result r = checkComm(comm, "ncclRecv")) return r;
  if (Result r = checkType(datatype, "ncclRecv", comm)) return r;
  return forward(tuttiRecv(recvbuff, count, static_cast<tuttiDataType_t>(datatype), peer, comm->tutti, stream));
}

Result ncclGroupStart() {
  ++tGroupDepth;
  return forward(tuttiGroupStart());
}

Result ncclGroupEnd() {
  Result r = forward(tuttiGroupEnd());
  if (tGroupDepth > 0 && --tGroupDepth == 0) tGroupTemps.clear();
  return r;
}

Result ncclGroupSimulateEnd(SimInfo*) {
  return refuse(kInvalidUsage, "ncclGroupSimulateEnd",
                "not supported by tutti (its cost model is internal); the group stays open");
}

// All-to-all, gather and scatter: grouped sends and receives, as NCCL builds them.
Result ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, int datatype, ncclComm* comm,
                    void* stream) {
  if (Result r = checkComm(comm, "ncclAlltoAll")) return r;
  if (Result r = checkType(datatype, "ncclAlltoAll", comm)) return r;
  size_t bytes = count * dtypeSize(static_cast<DataType>(datatype));
  int n = commSize(comm);
  ncclGroupStart();
  Result r = kSuccess;
  for (int p = 0; p < n && r == kSuccess; ++p) {
    r = ncclSend(static_cast<const char*>(sendbuff) + p * bytes, count, datatype, p, comm, stream);
    if (r == kSuccess) r = ncclRecv(static_cast<char*>(recvbuff) + p * bytes, count, datatype, p, comm, stream);
  }
  Result end = ncclGroupEnd();
  return r != kSuccess ? r : end;
}

Result ncclGather(const void* sendbuff, void* recvbuff, size_t count, int datatype, int root,
                  ncclComm* comm, void* stream) {
  if (Result r = checkComm(comm, "ncclGather")) return r;
  if (Result r = checkType(datatype, "ncclGather", comm)) return r;
  size_t bytes = count * dtypeSize(static_cast<DataType>(datatype));
  int n = commSize(comm), me = -1;
  tuttiCommUserRank(comm->tutti, &me);
  ncclGroupStart();
  Result r = ncclSend(sendbuff, count, datatype, root, comm, stream);
  for (int p = 0; me == root && p < n && r == kSuccess; ++p)
    r = ncclRecv(static_cast<char*>(recvbuff) + p * bytes, count, datatype, p, comm, stream);
  Result end = ncclGroupEnd();
  return r != kSuccess ? r : end;
}

Result ncclScatter(const void* sendbuff, void* recvbuff, size_t count, int datatype, int root,
                   ncclComm* comm, void* stream) {
  if (Result r = checkComm(comm, "ncclScatter")) return r;
  if (Result r = checkType(datatype, "ncclScatter", comm)) return r;
  size_t bytes = count * dtypeSize(static_cast<DataType>(datatype));
  int n = commSize(comm), me = -1;
  tuttiCommUserRank(comm->tutti, &me);
  ncclGroupStart();
  Result r = kSuccess;
  for (int p = 0; me == root && p < n && r == kSuccess; ++p)
    r = ncclSend(static_cast<const char*>(sendbuff) + p * bytes, count, datatype, p, comm, stream);
  if (r == kSuccess) r = ncclRecv(recvbuff, count, datatype, root, comm, stream);
  Result end = ncclGroupEnd();
  return r != kSuccess ? r : end;
}

}  // extern "C"
