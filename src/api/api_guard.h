// What every extern "C" entry point does around its body: turn Status into
// tuttiResult_t, remember the message for tuttiGetLastError, keep exceptions
// inside, and count calls in flight so tuttiCommAbort can wait them out.
#pragma once

#include <exception>
#include <memory>
#include <string>

#include "src/api/comm_handle.h"
#include "src/common/log.h"
#include "tutti/tutti.h"

namespace tutti {

// The last error of this thread, for calls without a usable communicator.
void setThreadLastError(const std::string& message);
const char* threadLastError();

inline tuttiResult_t toResult(Code code) { return static_cast<tuttiResult_t>(code); }

// Records and converts an error of `api` on `comm` (may be null).
tuttiResult_t report(tuttiComm_t comm, const char* api, const Status& st);

// Queries still answer on an aborted (revoked) communicator; calls do not.
enum class AfterAbort { kRefuse, kAnswer };

template <typename Body>
tuttiResult_t guardedCall(tuttiComm_t comm, const char* api, Body&& body,
                          AfterAbort afterAbort = AfterAbort::kRefuse) {
  if (!isHandle(comm)) return report(nullptr, api, checkHandle(comm));
  if (!comm->ready.load(std::memory_order_acquire)) {
    if (comm->initResult.load() != tuttiSuccess)
      return report(nullptr, api, InvalidUsage("the communicator's init failed (see its error)"));
    return report(nullptr, api, InvalidUsage("the communicator is still initializing: poll "
                                             "tuttiCommGetAsyncError until it is not "
                                             "tuttiInProgress"));
  }
  Communicator& c = *comm->impl;
  if (afterAbort == AfterAbort::kRefuse && c.abortFlag().load())
    return report(comm, api, InvalidUsage("the communicator was aborted"));
  c.activeCalls().fetch_add(1);
  setLogRank(c.rank());
  Status st;
  try {
    st = body(c);
  } catch (const std::bad_alloc&) {
    st = SystemError("out of memory");
  } catch (const std::exception& e) {
    st = InternalError(e.what());
  }
  // Report before leaving: tuttiCommAbort frees the comm once no call is inside.
  tuttiResult_t result = st.ok()                         ? tuttiSuccess
                         : st.code() == Code::kInProgress ? tuttiInProgress
                                                          : report(comm, api, st);
  c.activeCalls().fetch_sub(1);
  return result;
}

// Status of a call handed to the background thread: not an error.
inline Status inProgress() { return Status(Code::kInProgress, {}); }

}  // namespace tutti
