/*
 * tutti: collective communication for host and device memory.
 *
 * The C API mirrors NCCL's (rename nccl -> tutti): same argument order, same
 * enum values, a 128-byte unique id, and a final stream argument (a
 * cudaStream_t for device buffers; ignored for host buffers).
 * Usable from C99 and C++.
 */
#ifndef TUTTI_TUTTI_H_
#define TUTTI_TUTTI_H_

#include <stddef.h>

#define TUTTI_MAJOR 0
#define TUTTI_MINOR 1
#define TUTTI_PATCH 0
#define TUTTI_VERSION_CODE(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define TUTTI_VERSION TUTTI_VERSION_CODE(TUTTI_MAJOR, TUTTI_MINOR, TUTTI_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tuttiComm* tuttiComm_t;

#define TUTTI_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[TUTTI_UNIQUE_ID_BYTES];
} tuttiUniqueId;

typedef enum {
  tuttiSuccess = 0,
  tuttiUnhandledCudaError = 1,
  tuttiSystemError = 2,
  tuttiInternalError = 3,
  tuttiInvalidArgument = 4,
  tuttiInvalidUsage = 5,
  tuttiRemoteError = 6,
  tuttiInProgress = 7,
  tuttiTimeout = 8,
  tuttiNumResults = 9
} tuttiResult_t;

typedef enum {
  tuttiSum = 0,
  tuttiProd = 1,
  tuttiMax = 2,
  tuttiMin = 3,
  tuttiAvg = 4,
  tuttiNumOps = 5,
  /* Not ops: they make every int a value of this type in C++ too, so an
   * out-of-range op is refused as an argument, not undefined behaviour. */
  tuttiRedOpMinEnum = -0x7fffffff - 1,
  tuttiRedOpMaxEnum = 0x7fffffff
} tuttiRedOp_t;

typedef enum {
  tuttiInt8 = 0,
  tuttiChar = 0,
  tuttiUint8 = 1,
  tuttiInt32 = 2,
  tuttiInt = 2,
  tuttiUint32 = 3,
  tuttiInt64 = 4,
  tuttiUint64 = 5,
  tuttiFloat16 = 6,
  tuttiHalf = 6,
  tuttiFloat32 = 7,
  tuttiFloat = 7,
  tuttiFloat64 = 8,
  tuttiDouble = 8,
  tuttiBfloat16 = 9,
  tuttiNumTypes = 10,
  /* Not types: every int is a value of this type (see tuttiRedOpMaxEnum). */
  tuttiDataTypeMinEnum = -0x7fffffff - 1,
  tuttiDataTypeMaxEnum = 0x7fffffff
} tuttiDataType_t;

/* Options for tuttiCommInitRankConfig and tuttiCommSplit. Start from
 * TUTTI_CONFIG_INITIALIZER and set what you need: the size and magic let the
 * library refuse a struct that was not initialized. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  /* 1: calls return when done. 0: init, split, finalize and collectives may
   * return tuttiInProgress and complete in order on a background thread;
   * poll tuttiCommGetAsyncError until it stops saying tuttiInProgress. */
  int blocking;
  /* Seconds any wait may take before the call fails with tuttiTimeout;
   * 0 keeps TUTTI_TIMEOUT. */
  int timeoutSeconds;
  /* Shown in logs and error messages; copied. NULL: none. */
  const char* commName;
  /* 1: all-reduce, reduce and reduce-scatter combine every element in rank
   * order, ((x0 + x1) + x2) + ..., bit for bit the same whatever the
   * algorithm, channels, chunks or transport. 0: fastest order. -1 (the
   * initializer's): TUTTI_DETERMINISTIC decides. Must agree on every rank. */
  int deterministic;
  /* 1: the calls run on a thread of their own while the caller's threads
   * compute (a training framework's communication thread). Where ranks
   * outnumber cores, a wait then sleeps at once: a yield would hand the
   * core to a computing thread for a scheduler slice, and the data that
   * comes meanwhile would wait for it. 0 (the initializer's): waits yield
   * a while first, which ranks that only communicate (a benchmark) want. */
  int callsBesideCompute;
} tuttiConfig_t;

#define TUTTI_CONFIG_MAGIC 0x74757474u
#define TUTTI_CONFIG_INITIALIZER \
  { sizeof(tuttiConfig_t), TUTTI_CONFIG_MAGIC, TUTTI_VERSION, 1, 0, NULL, -1, 0 }
/* tuttiCommSplit's color for ranks that join no new communicator. */
#define TUTTI_SPLIT_NOCOLOR (-1)

/* Version as TUTTI_VERSION_CODE(major, minor, patch). */
tuttiResult_t tuttiGetVersion(int* version);
const char* tuttiGetErrorString(tuttiResult_t result);
/* The last error message on this communicator (or, with NULL, on this thread). */
const char* tuttiGetLastError(tuttiComm_t comm);

/* Creates the rendezvous point in the calling process (a root thread that
 * lives until every rank has joined); pass the id to every rank. */
tuttiResult_t tuttiGetUniqueId(tuttiUniqueId* uniqueId);
tuttiResult_t tuttiCommInitRank(tuttiComm_t* comm, int nranks, tuttiUniqueId commId, int rank);
/* As tuttiCommInitRank, with options (NULL: the defaults). */
tuttiResult_t tuttiCommInitRankConfig(tuttiComm_t* comm, int nranks, tuttiUniqueId commId,
                                      int rank, tuttiConfig_t* config);
/* ndev ranks in this process, rank i bound to CUDA device devlist[i]
 * (several ranks may share one device). devlist NULL: device i modulo the
 * visible devices, or host-only communicators where the process has none. */
tuttiResult_t tuttiCommInitAll(tuttiComm_t* comms, int ndev, const int* devlist);
/* Rank and size from RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, PMI_* or SLURM_*;
 * rendezvous at TUTTI_COMM_ID=host:port or MASTER_ADDR:MASTER_PORT (rank 0 hosts it). */
tuttiResult_t tuttiCommInitFromEnv(tuttiComm_t* comm);
/* Collective over comm: ranks giving the same color form a new communicator,
 * ordered by key (then by their rank in comm). TUTTI_SPLIT_NOCOLOR gives
 * *newcomm = NULL. config NULL: the parent's options. */
tuttiResult_t tuttiCommSplit(tuttiComm_t comm, int color, int key, tuttiComm_t* newcomm,
                             tuttiConfig_t* config);
/* The ranks of comm not excluded form a new communicator, renumbered in
 * their order in comm (NCCL 2.27's ncclCommShrink). Only they call it, each
 * with the same list; the excluded ranks may be dead, stopped, or alive and
 * not calling. Flags, or-ed:
 *   TUTTI_SHRINK_ABORT: revoke comm first (tuttiCommRevoke), so calls still
 *     in flight on it end; without it no call may be in flight.
 *   TUTTI_SHRINK_EXCLUDE_FAILED (tutti's own): also exclude every rank comm
 *     named as the cause of a failure (a dead or stopped rank, or one that
 *     called something else); with it the list may be empty, so survivors
 *     need not agree on a list themselves.
 * config NULL: the parent's options. Returns once the new communicator is
 * ready, also for non-blocking ones; comm stays valid for tuttiCommDestroy
 * or tuttiCommAbort. */
/* tutti's own: the ranks of comm that TUTTI_SHRINK_EXCLUDE_FAILED would
 * exclude now, ascending: at most `capacity` into ranks, and how many there
 * are into *count. Answers on a revoked communicator too. */
tuttiResult_t tuttiCommFailedRanks(tuttiComm_t comm, int* ranks, int capacity, int* count);
#define TUTTI_SHRINK_DEFAULT 0x00
#define TUTTI_SHRINK_ABORT 0x01
#define TUTTI_SHRINK_EXCLUDE_FAILED 0x100
tuttiResult_t tuttiCommShrink(tuttiComm_t comm, const int* excludeRanks, int excludeCount,
                              tuttiComm_t* newcomm, tuttiConfig_t* config, int shrinkFlags);
/* Growing a communicator by ranks that join (NCCL 2.29's ncclCommGrow).
 * One existing rank, the coordinator, makes an id with tuttiCommGetUniqueId
 * (no call in flight on comm) and hands it to the joining ranks. Then every
 * rank calls tuttiCommGrow with nRanks, the new size:
 *   the coordinator: comm, &id, rank -1;  the other existing ranks: comm,
 *   NULL, rank -1 (they keep their numbers);  a joining rank: comm NULL,
 *   &id, its number (from comm's size up to nRanks - 1).
 * Returns once the new communicator is ready; an id serves one grow. */
tuttiResult_t tuttiCommGetUniqueId(tuttiComm_t comm, tuttiUniqueId* uniqueId);
tuttiResult_t tuttiCommGrow(tuttiComm_t comm, int nRanks, const tuttiUniqueId* uniqueId, int rank,
                            tuttiComm_t* newcomm, tuttiConfig_t* config);
/* Completes every outstanding call; afterwards only tuttiCommDestroy and the
 * queries are allowed. Non-blocking communicators return tuttiInProgress. */
tuttiResult_t tuttiCommFinalize(tuttiComm_t comm);
tuttiResult_t tuttiCommDestroy(tuttiComm_t comm);
/* Safe from any thread: makes every pending and future call on comm fail, then frees it. */
tuttiResult_t tuttiCommAbort(tuttiComm_t comm);
/* Safe from any thread: makes every pending and future call on comm fail and
 * tells its peers, as tuttiCommAbort does, but leaves the handle valid for
 * the queries and tuttiCommDestroy, so that a thread still inside a call on
 * it never sees it freed (NCCL 2.28's ncclCommRevoke). revokeFlags must be 0. */
tuttiResult_t tuttiCommRevoke(tuttiComm_t comm, int revokeFlags);
/* tuttiInProgress while a non-blocking init or call is still running, then
 * the first error a call met in the background (or from a failed peer). */
tuttiResult_t tuttiCommGetAsyncError(tuttiComm_t comm, tuttiResult_t* asyncError);
tuttiResult_t tuttiCommCount(const tuttiComm_t comm, int* count);
/* The CUDA device the communicator serves: the one current when it was made
 * (CUDA_VISIBLE_DEVICES numbering). A host-only communicator (no device
 * then) returns tuttiInvalidUsage and *device = -1. */
tuttiResult_t tuttiCommCuDevice(const tuttiComm_t comm, int* device);
tuttiResult_t tuttiCommUserRank(const tuttiComm_t comm, int* rank);
/* tutti's own: the memory this rank's connections hold for their slots,
 * in host memory (shared segments and socket buffers, page-locked memory
 * mapped for device calls) and in device memory. The rings' connections
 * are made at init, the others by the first call whose plan needs them;
 * TUTTI_DEBUG=INFO logs it at init and at destroy, with the settings. */
tuttiResult_t tuttiCommMemoryHeld(const tuttiComm_t comm, size_t* hostBytes, size_t* deviceBytes);
/* tutti's own: what the cost model chose for this communicator's latest
 * collective on host buffers, and the time it predicted, to set beside the
 * time measured (tutti-perf prints both; the flight recorder keeps them for
 * every call, and `tutti-trace --drift` compares). Calls on device buffers
 * (planned on tutti's background thread), sends, receives and tutti's own
 * calls leave it as it was. Before the first such call, sequence is 0,
 * algorithm "" and predictedUs 0. */
typedef struct {
  unsigned long long sequence; /* the call's number: a communicator's collectives count from 1 */
  char algorithm[16];          /* as TUTTI_ALGO names it: "ring", "tree", "oneshot", "rd", "twolevel", "hd" */
  int onHostBlock;             /* 1: a one-shot call that met in the host block (one host's small calls) */
  int nchannels;
  size_t chunkBytes;
  double predictedUs;          /* the model's time for the whole call, microseconds */
} tuttiCallChoice_t;
tuttiResult_t tuttiCommLastChoice(const tuttiComm_t comm, tuttiCallChoice_t* choice);

tuttiResult_t tuttiAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm,
                             void* stream);
tuttiResult_t tuttiAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             tuttiDataType_t datatype, tuttiComm_t comm, void* stream);
tuttiResult_t tuttiBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             tuttiDataType_t datatype, int root, tuttiComm_t comm, void* stream);
tuttiResult_t tuttiReduce(const void* sendbuff, void* recvbuff, size_t count,
                          tuttiDataType_t datatype, tuttiRedOp_t op, int root, tuttiComm_t comm,
                          void* stream);
tuttiResult_t tuttiReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm,
                                 void* stream);
tuttiResult_t tuttiBarrier(tuttiComm_t comm, void* stream);
tuttiResult_t tuttiSend(const void* sendbuff, size_t count, tuttiDataType_t datatype, int peer,
                        tuttiComm_t comm, void* stream);
tuttiResult_t tuttiRecv(void* recvbuff, size_t count, tuttiDataType_t datatype, int peer,
                        tuttiComm_t comm, void* stream);

/* Calls between GroupStart and GroupEnd (per thread, nestable) are queued and
 * run together at the outermost GroupEnd. */
tuttiResult_t tuttiGroupStart(void);
tuttiResult_t tuttiGroupEnd(void);

/* Device memory and streams of the runtime tutti runs on: CUDA, or with
 * TUTTI_EMULATE_DEVICE=N the N emulated GPUs of this process (memory and
 * kernels on the CPU), so that a program can try the device path on a
 * machine without a GPU. Buffers from tuttiMemAlloc are device memory to
 * every collective; streams are cudaStream_t under CUDA. */
tuttiResult_t tuttiDeviceCount(int* count);
/* Makes `device` current for the calling thread (cudaSetDevice). */
tuttiResult_t tuttiSetDevice(int device);
/* size bytes on the calling thread's current device; free with tuttiMemFree. */
tuttiResult_t tuttiMemAlloc(void** ptr, size_t size);
/* NULL is accepted; any pointer tuttiMemAlloc did not return is refused. */
tuttiResult_t tuttiMemFree(void* ptr);
/* Copies bytes between any two memories (host or device); returns when done. */
tuttiResult_t tuttiMemcpy(void* dst, const void* src, size_t bytes);
tuttiResult_t tuttiStreamCreate(void** stream);
tuttiResult_t tuttiStreamDestroy(void* stream);
/* Waits until everything queued on the stream is done. */
tuttiResult_t tuttiStreamSynchronize(void* stream);

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_TUTTI_H_ */
