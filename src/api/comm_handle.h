// What a tuttiComm_t points at: the communicator once it exists, and the
// state of a non-blocking one (its background, a failed init's result). Shared by the init, split, finalize and
// call paths of the API layer.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "src/bootstrap/root.h"
#include "src/comm/communicator.h"
#include "src/comm/background.h"
#include "tutti/tutti.h"

namespace tutti {

// A tuttiConfig_t, checked and copied.
struct CommSettings {
  bool blocking = true;
  CommOptions options;
};

// `config` NULL gives `defaults`; a struct that was not made from
// TUTTI_CONFIG_INITIALIZER is refused.
Result<CommSettings> settingsFrom(const tuttiConfig_t* config, const CommSettings& defaults);

// TUTTI_TIMEOUT in seconds (300 when unset): how long a rendezvous root waits.
Result<double> rendezvousTimeout();

// Starts a rendezvous root in this process (TUTTI_COMM_ID or the first
// interface TUTTI_SOCKET_IFNAME allows) and returns its handle.
Result<BootstrapHandle> makeRendezvous();

}  // namespace tutti

struct tuttiComm {
  // First, and checked at every entry point before anything else is read: a
  // pointer that is no live handle (zeroed, destroyed, another object) is
  // refused instead of used. Cleared when the handle is freed.
  uint64_t magic = kMagic;
  static constexpr uint64_t kMagic = 0x74757474692d636dull;  // "tutti-cm"
  ~tuttiComm() { *const_cast<volatile uint64_t*>(&magic) = 0; }

  std::unique_ptr<tutti::Communicator> impl;  // read only once `ready`
  std::atomic<bool> ready{false};
  std::atomic<int> initResult{tuttiSuccess};  // a failed background init
  std::atomic<bool> finalized{false};
  tutti::CommSettings settings;
  tutti::Background background;
};

namespace tutti {

// NULL, or a pointer without the handle's magic word, is InvalidArgument.
Status checkHandle(tuttiComm_t comm);
inline bool isHandle(tuttiComm_t comm) { return comm && comm->magic == tuttiComm::kMagic; }

// A handle for a communicator still to be made; non-blocking ones get their
// background thread.
tuttiComm_t newHandle(const CommSettings& settings);
// The calling thread's current CUDA device, or -1 when the process has none.
int callerDevice();
// Makes the communicator into `handle`; on failure records the result there
// (and logs it) for tuttiCommGetAsyncError.
Status initInto(tuttiComm_t handle, const BootstrapHandle& boot, int nranks, int rank);
// Ends a background init of `handle` that gave `st`: a failure is kept for
// tuttiCommGetAsyncError (unless initInto kept one already).
void keepInitFailure(tuttiComm_t handle, const Status& st);
// Runs `task` on the communicator's background thread after its earlier
// calls; an error becomes the async error. The caller returns tuttiInProgress.
void runInBackground(tuttiComm_t comm, const char* api, std::function<Status()> task);
// Fails every call in flight on a ready communicator and every later one,
// and tells its peers (tuttiCommAbort, tuttiCommRevoke); false if a call is
// still inside after the timeout.
bool stopCalls(Communicator& c);

}  // namespace tutti
