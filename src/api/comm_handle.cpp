#include "src/api/comm_handle.h"

#include <cstddef>
#include <cstring>

#include "src/api/api_guard.h"
#include "src/common/config.h"
#include "src/common/interfaces.h"

namespace tutti {

Result<CommSettings> settingsFrom(const tuttiConfig_t* config, const CommSettings& defaults) {
  if (!config) return defaults;
  // Programs built before a field was added pass a smaller struct: the
  // fields it lacks keep their defaults.
  constexpr size_t kFirstSize = offsetof(tuttiConfig_t, deterministic);
  const bool hasDeterministic = config->size >= offsetof(tuttiConfig_t, deterministic) + sizeof(int);
  const bool hasBesideCompute = config->size >= offsetof(tuttiConfig_t, callsBesideCompute) + sizeof(int);
  if (config->magic != TUTTI_CONFIG_MAGIC || config->size < kFirstSize)
    return InvalidArgument("config was not initialized with TUTTI_CONFIG_INITIALIZER (size " +
                           std::to_string(config->size) + ", magic " +
                           std::to_string(config->magic) + ")");
  if (config->blocking != 0 && config->blocking != 1)
    return InvalidArgument("config->blocking is " + std::to_string(config->blocking) +
                           ", must be 0 or 1");
  if (config->timeoutSeconds < 0)
    return InvalidArgument("config->timeoutSeconds is " + std::to_string(config->timeoutSeconds) +
                           ", must be >= 0");
  if (hasDeterministic && (config->deterministic < -1 || config->deterministic > 1))
    return InvalidArgument("config->deterministic is " + std::to_string(config->deterministic) +
                           ", must be -1, 0 or 1");
  if (hasBesideCompute && config->callsBesideCompute != 0 && config->callsBesideCompute != 1)
    return InvalidArgument("config->callsBesideCompute is " + std::to_string(config->callsBesideCompute) +
                           ", must be 0 or 1");
  CommSettings s;
  s.blocking = config->blocking == 1;
  if (hasDeterministic) s.options.deterministic = config->deterministic;
  if (hasBesideCompute) s.options.callsBesideCompute = config->callsBesideCompute == 1;
  s.options.timeoutSeconds = config->timeoutSeconds;
  if (config->commName) s.options.name = config->commName;
  return s;
}

Result<double> rendezvousTimeout() {
  TUTTI_ASSIGN_OR_RETURN(int64_t t, tunableInt("TIMEOUT"));
  return t > 0 ? static_cast<double>(t) : 300.0;
}

Result<BootstrapHandle> makeRendezvous() {
  TUTTI_ASSIGN_OR_RETURN(double timeout, rendezvousTimeout());
  std::string commId = tunableString("COMM_ID");
  if (!commId.empty()) {
    TUTTI_ASSIGN_OR_RETURN(SocketAddress addr, SocketAddress::parse(commId));
    TUTTI_ASSIGN_OR_RETURN(BootstrapHandle handle, startRoot(addr, randomMagic(), timeout));
    handle.root = toWire(addr);
    return handle;
  }
  TUTTI_ASSIGN_OR_RETURN(auto ifaces, chooseInterfacesFromEnv());
  return startRoot(ifaces.front().address, randomMagic(), timeout);
}

Status checkHandle(tuttiComm_t comm) {
  if (!comm) return InvalidArgument("comm is NULL");
  if (comm->magic != tuttiComm::kMagic)
    return InvalidArgument("comm is not a tutti communicator (no handle magic word: "
                           "uninitialized, destroyed or corrupted?)");
  return Status::Ok();
}

tuttiComm_t newHandle(const CommSettings& settings) {
  auto* handle = new tuttiComm;
  handle->settings = settings;
  if (!settings.blocking) handle->background.start();
  return handle;
}

int callerDevice() {
  DeviceRuntime& rt = deviceRuntime();
  if (rt.deviceCount() == 0) return -1;
  auto d = rt.currentDevice();
  return d.ok() ? *d : -1;
}

Status initInto(tuttiComm_t handle, const BootstrapHandle& boot, int nranks, int rank) {
  auto created = Communicator::create(boot, nranks, rank, handle->settings.options);
  if (!created.ok()) {
    Status st = created.status().withContext("rank " + std::to_string(rank));
    handle->initResult.store(toResult(st.code()));
    return st;
  }
  handle->impl = std::move(created.value());
  handle->impl->setApiHandle(handle);
  handle->ready.store(true, std::memory_order_release);
  return Status::Ok();
}

void keepInitFailure(tuttiComm_t handle, const Status& st) {
  if (!st.ok() && handle->initResult.load() == tuttiSuccess)
    handle->initResult.store(toResult(st.code()));
}

void runInBackground(tuttiComm_t comm, const char* api, std::function<Status()> task) {
  comm->background.post([comm, api, task = std::move(task)] {
    Communicator* c = comm->ready.load(std::memory_order_acquire) ? comm->impl.get() : nullptr;
    if (c) setLogRank(c->rank());
    Status st = c && c->abortFlag().load() ? InvalidUsage("the communicator was aborted") : task();
    if (!st.ok()) {
      report(comm, api, st);
      if (c) c->setAsyncError(st.code());
    }
  });
}

}  // namespace tutti
