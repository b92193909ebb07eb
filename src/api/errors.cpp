// Result strings, last-error bookkeeping and the version.
#include <string>

#include "src/api/api_guard.h"

namespace tutti {

namespace {
thread_local std::string tLastError;
}

void setThreadLastError(const std::string& message) { tLastError = message; }
const char* threadLastError() { return tLastError.c_str(); }

tuttiResult_t report(tuttiComm_t comm, const char* api, const Status& st) {
  std::string where = api;
  Communicator* c = isHandle(comm) && comm->ready.load(std::memory_order_acquire) ? comm->impl.get() : nullptr;
  if (c) {
    where += " (rank " + std::to_string(c->rank());
    if (!c->name().empty()) where += " of " + c->name();
    where += ")";
  }
  std::string message = where + ": " + st.message();
  setThreadLastError(message);
  if (c) c->setLastError(message);
  TUTTI_WARN(kSubsysAll, "%s", message.c_str());
  return toResult(st.code());
}

}  // namespace tutti

extern "C" {

tuttiResult_t tuttiGetVersion(int* version) {
  if (!version) return tuttiInvalidArgument;
  *version = TUTTI_VERSION;
  return tuttiSuccess;
}

const char* tuttiGetErrorString(tuttiResult_t result) {
  switch (result) {
    case tuttiSuccess: return "no error";
    case tuttiUnhandledCudaError: return "unhandled cuda error";
    case tuttiSystemError: return "unhandled system error (network, memory, shared memory)";
    case tuttiInternalError: return "internal error - please report this issue";
    case tuttiInvalidArgument: return "invalid argument";
    case tuttiInvalidUsage: return "invalid usage";
    case tuttiRemoteError: return "remote process exited or there was a network error";
    case tuttiInProgress: return "operation in progress";
    case tuttiTimeout: return "timed out (TUTTI_TIMEOUT)";
    default: return "unknown result code";
  }
}

const char* tuttiGetLastError(tuttiComm_t comm) {
  if (tutti::isHandle(comm) && comm->ready.load(std::memory_order_acquire)) {
    // Keep the string alive for the caller: copy into thread storage.
    thread_local std::string copy;
    copy = comm->impl->lastError();
    return copy.c_str();
  }
  return tutti::threadLastError();
}

}  // extern "C"
