// Communicator life cycle: unique ids, init (by id, all-in-process, from the
// launcher's environment), destroy, abort, queries.
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "src/api/api_guard.h"
#include "src/bootstrap/launcher_env.h"
#include "src/bootstrap/root.h"
#include "src/comm/comm_config.h"
#include "src/common/config.h"
#include "src/common/interfaces.h"

using namespace tutti;

namespace {

tuttiResult_t initRank(tuttiComm_t* comm, int nranks, const BootstrapHandle& handle, int rank,
                       const tuttiConfig_t* config, const char* api) {
  if (!comm) return report(nullptr, api, InvalidArgument("comm (the output pointer) is NULL"));
  *comm = nullptr;
  if (nranks < 1)
    return report(nullptr, api, InvalidArgument("nranks is " + std::to_string(nranks) + ", must be >= 1"));
  if (rank < 0 || rank >= nranks)
    return report(nullptr, api, InvalidArgument("rank " + std::to_string(rank) +
                                                " is out of range for nranks " + std::to_string(nranks)));
  if (handle.magic == 0 || (handle.root.family != AF_INET && handle.root.family != AF_INET6))
    return report(nullptr, api, InvalidArgument("the unique id is empty or corrupt (was it made by "
                                                "tuttiGetUniqueId?)"));
  auto settings = settingsFrom(config, CommSettings{});
  if (!settings.ok()) return report(nullptr, api, settings.status());
  settings->options.device = callerDevice();  // as NCCL: the device current at init
  reloadLogConfig();
  tuttiComm_t made = newHandle(*settings);
  if (!settings->blocking) {
    // The caller polls tuttiCommGetAsyncError; the handle exists at once.
    made->background.post([made, handle, nranks, rank, api] {
      Status st = initInto(made, handle, nranks, rank);
      if (!st.ok()) report(nullptr, api, st);
      keepInitFailure(made, st);
    });
    *comm = made;
    return tuttiInProgress;
  }
  Status st = initInto(made, handle, nranks, rank);
  if (!st.ok()) {
    delete made;
    return report(nullptr, api, st);
  }
  *comm = made;
  return tuttiSuccess;
}

}  // namespace

extern "C" {

tuttiResult_t tuttiGetUniqueId(tuttiUniqueId* uniqueId) {
  if (!uniqueId) return report(nullptr, "tuttiGetUniqueId", InvalidArgument("uniqueId is NULL"));
  reloadLogConfig();
  auto handle = makeRendezvous();
  if (!handle.ok()) return report(nullptr, "tuttiGetUniqueId", handle.status());
  std::memset(uniqueId, 0, sizeof(*uniqueId));
  std::memcpy(uniqueId->internal, &handle.value(), sizeof(BootstrapHandle));
  return tuttiSuccess;
}

tuttiResult_t tuttiCommInitRank(tuttiComm_t* comm, int nranks, tuttiUniqueId commId, int rank) {
  BootstrapHandle handle;
  std::memcpy(&handle, commId.internal, sizeof(handle));
  return initRank(comm, nranks, handle, rank, nullptr, "tuttiCommInitRank");
}

tuttiResult_t tuttiCommInitRankConfig(tuttiComm_t* comm, int nranks, tuttiUniqueId commId,
                                      int rank, tuttiConfig_t* config) {
  BootstrapHandle handle;
  std::memcpy(&handle, commId.internal, sizeof(handle));
  return initRank(comm, nranks, handle, rank, config, "tuttiCommInitRankConfig");
}

tuttiResult_t tuttiCommInitAll(tuttiComm_t* comms, int ndev, const int* devlist) {
  const char* api = "tuttiCommInitAll";
  if (!comms) return report(nullptr, api, InvalidArgument("comms is NULL"));
  if (ndev < 1) return report(nullptr, api, InvalidArgument("ndev must be >= 1"));
  const int visible = deviceRuntime().deviceCount();
  for (int i = 0; devlist && i < ndev; ++i)
    if (devlist[i] < 0 || devlist[i] >= visible)
      return report(nullptr, api, InvalidArgument(
          "devlist[" + std::to_string(i) + "] is " + std::to_string(devlist[i]) + " but " +
          std::to_string(visible) + " CUDA devices are visible" +
          (visible == 0 ? " (" + deviceRuntime().unavailableReason() + ")" : std::string())));
  tuttiUniqueId id;
  tuttiResult_t r = tuttiGetUniqueId(&id);
  if (r != tuttiSuccess) return r;
  std::vector<tuttiResult_t> results(ndev, tuttiSuccess);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i)
    threads.emplace_back([&, i] {
      // Each rank's thread makes its device current: init binds to it.
      if (visible > 0) {
        Status st = deviceRuntime().setDevice(devlist ? devlist[i] : i % visible);
        if (!st.ok()) {
          results[i] = report(nullptr, api, st.withContext("rank " + std::to_string(i)));
          return;
        }
      }
      results[i] = tuttiCommInitRank(&comms[i], ndev, id, i);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i)
    if (results[i] != tuttiSuccess) {
      for (int j = 0; j < ndev; ++j) {
        if (comms[j]) tuttiCommDestroy(comms[j]);
        comms[j] = nullptr;
      }
      return results[i];
    }
  return tuttiSuccess;
}

tuttiResult_t tuttiCommInitFromEnv(tuttiComm_t* comm) {
  const char* api = "tuttiCommInitFromEnv";
  auto env = readLauncherEnv();
  if (!env.ok()) return report(nullptr, api, env.status());
  auto addr = SocketAddress::parse(env->rendezvous);
  if (!addr.ok()) return report(nullptr, api, addr.status());
  BootstrapHandle handle = handleForAddress(*addr, env->rendezvous + "|" + std::to_string(env->size));
  if (env->rank == 0) {
    auto timeout = rendezvousTimeout();
    Status st = timeout.status();
    // Rank 0 hosts the root on every address of the port the others will dial.
    SocketAddress any;
    any.storage.ss_family = static_cast<sa_family_t>(addr->family());
    any.length = addr->length;
    any.setPort(addr->port());
    if (st.ok()) {
      auto started = startRoot(any, handle.magic, *timeout);
      st = started.status();
    }
    if (!st.ok())
      return report(nullptr, api, st.withContext("rank 0 cannot host the rendezvous at " +
                                                 env->rendezvous));
  }
  return initRank(comm, env->size, handle, env->rank, nullptr, api);
}

tuttiResult_t tuttiCommDestroy(tuttiComm_t comm) {
  if (Status st = checkHandle(comm); !st.ok()) return report(nullptr, "tuttiCommDestroy", st);
  comm->background.drain();
  delete comm;
  return tuttiSuccess;
}

tuttiResult_t tuttiCommFinalize(tuttiComm_t comm) {
  return guardedCall(comm, "tuttiCommFinalize", [&](Communicator&) -> Status {
    if (comm->finalized.load()) return InvalidUsage("the communicator was already finalized");
    if (!comm->settings.blocking) {
      // Done once the calls queued before it are.
      runInBackground(comm, "tuttiCommFinalize", [comm] {
        comm->finalized.store(true);
        return Status::Ok();
      });
      return inProgress();
    }
    comm->background.drain();  // device-buffer calls still queued complete first
    comm->finalized.store(true);
    return Status::Ok();
  });
}

}  // extern "C"

bool tutti::stopCalls(Communicator& c) {
  c.abortFlag().store(true);
  // Calls in flight notice the flag within milliseconds; wait them out.
  Deadline deadline = Deadline::after(c.config().timeoutSeconds);
  while (c.activeCalls().load() > 0 && !deadline.expired())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  c.notifyRevoked();
  return c.activeCalls().load() == 0;
}

extern "C" {

tuttiResult_t tuttiCommAbort(tuttiComm_t comm) {
  if (Status st = checkHandle(comm); !st.ok()) return report(nullptr, "tuttiCommAbort", st);
  if (comm->ready.load(std::memory_order_acquire) && !stopCalls(*comm->impl))
    return tuttiInternalError;  // leak rather than free in use
  comm->background.stop();  // queued calls fail at once on the abort flag
  delete comm;
  return tuttiSuccess;
}

tuttiResult_t tuttiCommRevoke(tuttiComm_t comm, int revokeFlags) {
  const char* api = "tuttiCommRevoke";
  if (Status st = checkHandle(comm); !st.ok()) return report(nullptr, api, st);
  if (revokeFlags != 0)
    return report(comm, api, InvalidArgument("revokeFlags is " + std::to_string(revokeFlags) + "; it must be 0"));
  if (!comm->ready.load(std::memory_order_acquire))
    return report(comm, api, InvalidUsage("the communicator is not initialized (tuttiCommAbort ends an init)"));
  if (!stopCalls(*comm->impl))
    return report(comm, api, InternalError("a call was still inside after the timeout"));
  return tuttiSuccess;
}

tuttiResult_t tuttiCommGetAsyncError(tuttiComm_t comm, tuttiResult_t* asyncError) {
  const char* api = "tuttiCommGetAsyncError";
  if (Status st = checkHandle(comm); !st.ok()) return report(nullptr, api, st);
  if (!asyncError) return report(comm, api, InvalidArgument("asyncError is NULL"));
  // Busy until after ready or initResult is set.
  if (comm->background.busy()) {
    *asyncError = tuttiInProgress;
  } else if (!comm->ready.load(std::memory_order_acquire)) {
    *asyncError = static_cast<tuttiResult_t>(comm->initResult.load());
  } else {
    *asyncError = toResult(comm->impl->asyncError());
  }
  return tuttiSuccess;
}

tuttiResult_t tuttiCommCount(const tuttiComm_t comm, int* count) {
  if (!count) return report(comm, "tuttiCommCount", InvalidArgument("count is NULL"));
  return guardedCall(comm, "tuttiCommCount", [&](Communicator& c) {
    *count = c.size();
    return Status::Ok();
  }, AfterAbort::kAnswer);
}

tuttiResult_t tuttiCommCuDevice(const tuttiComm_t comm, int* device) {
  if (!device) return report(comm, "tuttiCommCuDevice", InvalidArgument("device is NULL"));
  return guardedCall(comm, "tuttiCommCuDevice", [&](Communicator& c) {
    *device = c.device();
    if (c.device() < 0)
      return InvalidUsage("the communicator is host-only: no CUDA device was current when it was made");
    return Status::Ok();
  }, AfterAbort::kAnswer);
}

tuttiResult_t tuttiCommMemoryHeld(const tuttiComm_t comm, size_t* hostBytes, size_t* deviceBytes) {
  if (!hostBytes || !deviceBytes)
    return report(comm, "tuttiCommMemoryHeld", InvalidArgument("hostBytes and deviceBytes must not be NULL"));
  return guardedCall(comm, "tuttiCommMemoryHeld", [&](Communicator& c) {
    *hostBytes = c.memoryHeld().hostBytes.load();
    *deviceBytes = c.memoryHeld().deviceBytes.load();
    return Status::Ok();
  }, AfterAbort::kAnswer);
}

tuttiResult_t tuttiCommLastChoice(const tuttiComm_t comm, tuttiCallChoice_t* choice) {
  if (!choice) return report(comm, "tuttiCommLastChoice", InvalidArgument("choice is NULL"));
  return guardedCall(comm, "tuttiCommLastChoice", [&](Communicator& c) {
    const Communicator::LastChoice last = c.lastChoice();
    *choice = tuttiCallChoice_t{};
    choice->sequence = last.call.sequence;
    if (last.call.sequence == 0) return Status::Ok();
    snprintf(choice->algorithm, sizeof(choice->algorithm), "%s", algorithmName(last.choice.algorithm));
    choice->onHostBlock = last.call.onHostBlock ? 1 : 0;
    choice->nchannels = last.call.onHostBlock ? 0 : last.choice.nchannels;
    choice->chunkBytes = last.call.onHostBlock ? 0 : last.choice.chunkBytes;
    choice->predictedUs = last.choice.predictedUs;
    return Status::Ok();
  }, AfterAbort::kAnswer);
}

tuttiResult_t tuttiCommUserRank(const tuttiComm_t comm, int* rank) {
  if (!rank) return report(comm, "tuttiCommUserRank", InvalidArgument("rank is NULL"));
  return guardedCall(comm, "tuttiCommUserRank", [&](Communicator& c) {
    *rank = c.rank();
    return Status::Ok();
  }, AfterAbort::kAnswer);
}

}  // extern "C"
