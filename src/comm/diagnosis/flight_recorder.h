// A communicator's flight recorder: its last TUTTI_TRACE_CALLS calls
// (sequence number, kind, size, start and end time, result, and the cost
// model's choice and predicted time, so that `tutti-trace --drift` can set
// the prediction beside the time taken) in a ring
// allocated once, so recording costs a few stores per call. Written as JSON
// lines (one call each, naming rank, host, pid and communicator, so that
// `tutti-trace` can merge every rank's file): at destroy when
// TUTTI_TRACE_FILE is set, at the first failed call, and on SIGUSR1 when
// TUTTI_TRACE_SIGNAL=1. Another thread may write it while calls go on: the
// fields are atomics, and a call recorded meanwhile may show half-updated.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "src/common/call_record.h"
#include "src/common/status.h"

namespace tutti {

struct CallRecord;

// The cost model's choice for a call, as recorded. `algorithm` is a name
// with static storage (algorithmName); nullptr where nothing was priced
// (sends and receives).
struct RecordedChoice {
  const char* algorithm = nullptr;
  int nchannels = 0;  // 0: on the host block, which has no channels
  float predictedUs = 0;
};

class FlightRecorder {
 public:
  struct Identity {
    int rank = 0;
    int nranks = 1;
    uint64_t commMagic = 0;
    std::string host;
    std::string commName;
  };

  FlightRecorder() = default;
  ~FlightRecorder();
  // Sizes the ring (TUTTI_TRACE_CALLS) and joins the SIGUSR1 list.
  Status start(const Identity& who);

  void begin(const CallSignature& call, bool onDevice, const RecordedChoice& choice);
  void end(uint64_t sequence, Code result);

  // The calls held, oldest first, as JSON lines.
  std::string jsonLines() const;
  // To TUTTI_TRACE_FILE, else (`toLogWithoutFile`) to the log; why says what prompted it.
  void write(const char* why, bool toLogWithoutFile) const;
  // Writes at most once per communicator after a failed call.
  void writeOnFirstError();

 private:
  struct Entry {
    AtomicCallSignature call;
    std::atomic<int64_t> startTicks{0};  // cycle counter (cheap); wall clock when written out
    std::atomic<int64_t> endTicks{0};    // 0: not ended
    std::atomic<int32_t> result{0};
    std::atomic<int32_t> onDevice{0};
    std::atomic<const char*> algorithm{nullptr};
    std::atomic<int32_t> nchannels{0};
    std::atomic<float> predictedUs{0};
  };
  Identity who_;
  size_t capacity_ = 0;  // the calls it keeps
  size_t mask_ = 0;      // its ring's slots, a power of two (a mask, not a division, a call), less one
  std::unique_ptr<Entry[]> ring_;
  std::atomic<uint64_t> calls_{0};  // ever begun; the next goes to calls_ & mask_
  int64_t startTicks_ = 0;          // the cycle counter and the wall clock at start,
  int64_t startWallUs_ = 0;         // to turn ticks into wall time when written
  std::atomic<bool> errorWritten_{false};
};

}  // namespace tutti
