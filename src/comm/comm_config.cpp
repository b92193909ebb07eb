#include "src/comm/comm_config.h"

#include "src/common/config.h"
#include "src/common/hash.h"
#include "transport/registry.h"

namespace tutti {

Result<CommConfig> CommConfig::fromEnv() {
  CommConfig c;
  TUTTI_ASSIGN_OR_RETURN(int64_t timeout, tunableInt("TIMEOUT"));
  TUTTI_ASSIGN_OR_RETURN(int64_t buffsize, tunableInt("BUFFSIZE"));
  TUTTI_ASSIGN_OR_RETURN(int64_t nsteps, tunableInt("NSTEPS"));
  TUTTI_ASSIGN_OR_RETURN(int64_t nchannels, tunableInt("NCHANNELS"));
  TUTTI_ASSIGN_OR_RETURN(int64_t spin, tunableInt("SPIN_COUNT"));
  TUTTI_ASSIGN_OR_RETURN(int64_t shmOff, tunableInt("SHM_DISABLE"));
  if (timeout <= 0) return InvalidArgument("TUTTI_TIMEOUT must be a positive number of seconds");
  if (nsteps < 2 || nsteps > 16) return InvalidArgument("TUTTI_NSTEPS must be between 2 and 16");
  if (buffsize < nsteps * 4096 || buffsize > (1ll << 30))
    return InvalidArgument("TUTTI_BUFFSIZE must be between NSTEPS*4096 and 1 GiB");
  if (nchannels < 0 || nchannels > 32) return InvalidArgument("TUTTI_NCHANNELS must be 0..32");
  c.timeoutSeconds = static_cast<double>(timeout);
  c.nslots = static_cast<int>(nsteps);
  c.slotBytes = static_cast<size_t>(buffsize / nsteps) / 4096 * 4096;
  c.channelsForced = nchannels > 0;
  c.maxChannels = nchannels > 0 ? static_cast<int>(nchannels) : 2;
  c.spinCount = spin < 0 ? 0 : static_cast<int>(spin);
  std::string source;
  tunableString("SPIN_COUNT", &source);
  c.spinForced = source != "default";
  c.shmDisabled = shmOff != 0;
  std::string order = tunableString("RING_ORDER");
  if (order == "topo") c.ringOrder = RingOrder::kTopo;
  else if (order == "rank") c.ringOrder = RingOrder::kRank;
  else return InvalidArgument("TUTTI_RING_ORDER must be topo or rank, not \"" + order + "\"");
  c.algoSpec = tunableString("ALGO");
  TUTTI_ASSIGN_OR_RETURN(c.algoFilter, AlgoFilter::parse(c.algoSpec));
  TUTTI_ASSIGN_OR_RETURN(c.net, chooseNet(tunableString("NET")));
  TUTTI_ASSIGN_OR_RETURN(int64_t emulated, tunableInt("EMULATE_DEVICE"));
  if (emulated < 0 || emulated > 16) return InvalidArgument("TUTTI_EMULATE_DEVICE must be between 0 and 16");
  TUTTI_ASSIGN_OR_RETURN(int64_t p2pOff, tunableInt("P2P_DISABLE"));
  TUTTI_ASSIGN_OR_RETURN(int64_t p2pBuff, tunableInt("P2P_BUFFSIZE"));
  if (p2pBuff < nsteps * 4096 || p2pBuff > (1ll << 32))
    return InvalidArgument("TUTTI_P2P_BUFFSIZE must be between NSTEPS*4096 and 4 GiB");
  c.p2pDisabled = p2pOff != 0;
  const std::string worker = tunableString("DEVICE_WORKER");
  if (worker != "grid" && worker != "lean")
    return InvalidArgument("TUTTI_DEVICE_WORKER must be grid or lean, not \"" + worker + "\"");
  c.leanWorker = worker == "lean";
  c.deviceSlotBytes = static_cast<size_t>(p2pBuff / nsteps) / 4096 * 4096;
  TUTTI_ASSIGN_OR_RETURN(int64_t deterministic, tunableInt("DETERMINISTIC"));
  if (deterministic != 0 && deterministic != 1) return InvalidArgument("TUTTI_DETERMINISTIC must be 0 or 1");
  c.deterministic = deterministic == 1;
  TUTTI_ASSIGN_OR_RETURN(int64_t matchCheckMs, tunableInt("MATCH_CHECK_MS"));
  if (matchCheckMs < 0) return InvalidArgument("TUTTI_MATCH_CHECK_MS must be >= 0");
  c.matchCheckSeconds = static_cast<double>(matchCheckMs) / 1000.0;
  TUTTI_ASSIGN_OR_RETURN(int64_t checkCalls, tunableInt("CHECK_CALLS"));
  if (checkCalls != 0 && checkCalls != 1) return InvalidArgument("TUTTI_CHECK_CALLS must be 0 or 1");
  c.checkCalls = checkCalls == 1;
  TUTTI_ASSIGN_OR_RETURN(int64_t measure, tunableInt("MEASURE_LINKS"));
  if (measure != 0 && measure != 1) return InvalidArgument("TUTTI_MEASURE_LINKS must be 0 or 1");
  c.measureLinks = measure == 1;
  TUTTI_ASSIGN_OR_RETURN(int64_t keep, tunableInt("KEEP_CALL_TIMES"));
  if (keep != 0 && keep != 1) return InvalidArgument("TUTTI_KEEP_CALL_TIMES must be 0 or 1");
  c.keepCallTimes = keep == 1;
  TUTTI_ASSIGN_OR_RETURN(int64_t nodeCores, tunableInt("NODE_CORES"));
  if (nodeCores != 0 && nodeCores != 1) return InvalidArgument("TUTTI_NODE_CORES must be 0 or 1");
  c.nodeCores = nodeCores == 1;
  return c;
}

void CommConfig::adaptToOversubscription(int ranksOnCores, int cores, int nodes, bool besideCompute) {
  constexpr int kSocketYieldRounds = 2000;
  // 4 ranks on 2 cores: yielding 20,000 times took CPU from ranks in
  // backward; sleeping after 200 took DDP's step from 0.80-1.22x gloo's
  // time to 0.81-0.91x, FSDP2's from 0.61-0.86x to 0.65-0.76x
  // (bench/results/shared_memory_sleep.md).
  constexpr int kSharedMemoryYieldRounds = 200;
  // Training on 2 namespace nodes x 2 ranks sharing 2 cores, one yield can
  // hand the core to a rank in its backward pass for a scheduler slice, and
  // data that comes meanwhile waits for the yielder's turn. With waits on
  // shared memory sleeping once they had yielded 200 us (on the doorbell
  // where they mix sockets and shared memory), DDP's step went from 1.01x
  // gloo's to 0.89-0.91x, FSDP2's from 0.88x to 0.74x; after 1 ms, 0.95x and
  // 0.83x. Waits on sockets alone keep their rounds: sleeping after 200 us
  // cost 4 x 1 shaped calls of 1-4 MiB 3-8% (bench/results/sleep_across_nodes.md).
  constexpr int kYieldUsBeforeSleep = 200;
  if (ranksOnCores <= cores) return;
  sharedMemoryYieldRounds = kSharedMemoryYieldRounds;
  yieldUsBeforeSleep = kYieldUsBeforeSleep;
  // One host: a few polls catch a host-mate's answer already on its way.
  // Across nodes an answer takes a network trip, and each poll spent
  // waiting for it delays the ranks sharing the core (2x2 and 4x1 ranks on
  // 2 cores: 8 B calls 5-10% faster yielding at once).
  if (!spinForced) spinCount = nodes > 1 ? 0 : 20;
  if (nodes > 1) socketYieldRounds = kSocketYieldRounds;
  // A framework's communication thread beside its compute (DDP's buckets
  // are reduced while backward runs): a yield hands the core to a computing
  // thread for a slice, where all the ranks of a benchmark are in the call
  // and a yield hands it to one that moves it on. 4 ranks on 2 cores,
  // sleeping at once: DDP's step 0.79-0.89x gloo's time against 0.85-0.89x,
  // FSDP2's 0.62-0.68x against 0.67-0.78x (a 1 MiB bucket had taken 26-45
  // ms once every rank was in it); tutti-perf's 128 KiB to 32 MiB calls
  // took 1.3-4x as long, so it is not the default
  // (bench/results/calls_beside_compute.md).
  if (besideCompute) {
    sharedMemoryYieldRounds = 1;
    yieldUsBeforeSleep = 0;
    socketYieldRounds = 0;
  }
}

static_assert(sizeof(CommConfig::Shared) == 64, "Shared is compared as bytes: it must have no padding");

CommConfig::Shared CommConfig::shared() const {
  return Shared{slotBytes, nslots, maxChannels, shmDisabled ? 1 : 0, static_cast<int32_t>(ringOrder),
                static_cast<int32_t>(net), p2pDisabled ? 1 : 0, fnv1a64(algoSpec.data(), algoSpec.size()),
                deviceSlotBytes, deterministic ? 1 : 0, measureLinks ? 1 : 0, keepCallTimes ? 1 : 0, 0};
}

}  // namespace tutti
