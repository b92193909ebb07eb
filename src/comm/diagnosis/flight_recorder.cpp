#include "src/comm/diagnosis/flight_recorder.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "kernels/dtype.h"
#include "src/comm/diagnosis/hang_report.h"
#include "src/common/clock.h"
#include "src/common/config.h"
#include "src/common/log.h"

namespace tutti {

namespace {

int64_t wallUs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// A few nanoseconds where a clock read costs tens: recording must not show
// in a small call's latency.
int64_t ticks() {
#if defined(__x86_64__)
  return static_cast<int64_t>(__builtin_ia32_rdtsc());
#else
  return nowNs();
#endif
}

// Every live recorder, for SIGUSR1. The handler only writes a byte to a
// pipe; a thread of tutti's does the writing, where allocating is safe.
struct SignalList {
  std::mutex mutex;
  std::set<const FlightRecorder*> live;
  int pipe[2] = {-1, -1};
};

SignalList& signalList() {
  static auto* list = new SignalList();  // its thread outlives static destruction
  return *list;
}

void onSignal(int) {
  const char byte = 1;
  ssize_t ignored = ::write(signalList().pipe[1], &byte, 1);
  (void)ignored;
}

void startSignalWatch() {
  static std::once_flag once;
  std::call_once(once, [] {
    SignalList& list = signalList();
    if (pipe2(list.pipe, O_CLOEXEC) != 0) return;
    std::thread([] {
      char byte;
      while (::read(signalList().pipe[0], &byte, 1) >= 0) {
        std::lock_guard<std::mutex> lock(signalList().mutex);
        for (const FlightRecorder* r : signalList().live) r->write("SIGUSR1", true);
      }
    }).detach();
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, nullptr);
  });
}

// Host and communicator names are the user's: keep the JSON well formed.
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

const char* resultName(Code c) {
  switch (c) {
    case Code::kOk: return "ok";
    case Code::kTimeout: return "timeout";
    case Code::kRemoteError: return "remote_error";
    case Code::kInvalidUsage: return "invalid_usage";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kSystemError: return "system_error";
    default: return "error";
  }
}

}  // namespace

FlightRecorder::~FlightRecorder() {
  if (!ring_) return;
  {
    std::lock_guard<std::mutex> lock(signalList().mutex);
    signalList().live.erase(this);
  }
  if (!tunableString("TRACE_FILE").empty()) write("destroy", false);
}

Status FlightRecorder::start(const Identity& who) {
  TUTTI_ASSIGN_OR_RETURN(int64_t calls, tunableInt("TRACE_CALLS"));
  TUTTI_ASSIGN_OR_RETURN(int64_t onSignal, tunableInt("TRACE_SIGNAL"));
  if (calls < 0 || calls > (1 << 20)) return InvalidArgument("TUTTI_TRACE_CALLS must be between 0 and 1048576");
  who_ = who;
  if (calls == 0) return Status::Ok();
  capacity_ = static_cast<size_t>(calls);
  size_t slots = 1;
  while (slots < capacity_) slots <<= 1;
  mask_ = slots - 1;
  ring_ = std::make_unique<Entry[]>(slots);
  startTicks_ = ticks();
  startWallUs_ = wallUs();
  if (onSignal == 1) {
    startSignalWatch();
    std::lock_guard<std::mutex> lock(signalList().mutex);
    signalList().live.insert(this);
  }
  return Status::Ok();
}

void FlightRecorder::begin(const CallSignature& call, bool onDevice, const RecordedChoice& choice) {
  if (!ring_) return;
  const uint64_t n = calls_.load(std::memory_order_relaxed);
  Entry& e = ring_[n & mask_];
  constexpr auto kRelaxed = std::memory_order_relaxed;
  e.call.store(call);
  e.startTicks.store(ticks(), kRelaxed);
  e.endTicks.store(0, kRelaxed);
  e.result.store(0, kRelaxed);
  e.onDevice.store(onDevice ? 1 : 0, kRelaxed);
  e.algorithm.store(choice.algorithm, kRelaxed);
  e.nchannels.store(choice.nchannels, kRelaxed);
  e.predictedUs.store(choice.predictedUs, kRelaxed);
  calls_.store(n + 1, std::memory_order_release);  // one writer: no read-modify-write
}

void FlightRecorder::end(uint64_t sequence, Code result) {
  if (!ring_) return;
  // A call's entry is among the last few begun (a group runs several together).
  const uint64_t n = calls_.load(std::memory_order_acquire);
  for (uint64_t back = 1; back <= std::min<uint64_t>(n, capacity_); ++back) {
    Entry& e = ring_[(n - back) & mask_];
    if (e.call.sequence.load(std::memory_order_relaxed) != sequence) continue;
    e.result.store(static_cast<int32_t>(result), std::memory_order_relaxed);
    e.endTicks.store(ticks(), std::memory_order_relaxed);
    return;
  }
}

std::string FlightRecorder::jsonLines() const {
  std::string out;
  if (!ring_) return out;
  const uint64_t n = calls_.load(std::memory_order_acquire);
  const uint64_t first = n > capacity_ ? n - capacity_ : 0;
  // Ticks to wall time, by the rate between start and now.
  const int64_t nowTicks = ticks(), nowUs = wallUs();
  const double usPerTick = nowTicks > startTicks_ ? static_cast<double>(nowUs - startWallUs_) / static_cast<double>(nowTicks - startTicks_) : 0;
  auto toWallUs = [&](int64_t t) { return t == 0 ? 0 : startWallUs_ + static_cast<int64_t>(static_cast<double>(t - startTicks_) * usPerTick); };
  char line[768], chosen[128];
  for (uint64_t i = first; i < n; ++i) {
    const Entry& e = ring_[i & mask_];
    const CallSignature r = e.call.load();
    const int64_t startTicks = e.startTicks.load(std::memory_order_relaxed), endTicks = e.endTicks.load(std::memory_order_relaxed);
    const int64_t endUs = toWallUs(endTicks);
    const auto result = static_cast<Code>(e.result.load(std::memory_order_relaxed));
    // The model's choice, and the time taken at the cycle counter's
    // resolution: a small call takes less than a microsecond.
    chosen[0] = 0;
    if (const char* algorithm = e.algorithm.load(std::memory_order_relaxed)) {
      int at = snprintf(chosen, sizeof(chosen), ", \"algorithm\": \"%s\", \"channels\": %d, \"predicted_us\": %.2f",
                        algorithm, e.nchannels.load(std::memory_order_relaxed), e.predictedUs.load(std::memory_order_relaxed));
      if (endTicks && at > 0 && at < static_cast<int>(sizeof(chosen)))
        snprintf(chosen + at, sizeof(chosen) - at, ", \"took_us\": %.3f", static_cast<double>(endTicks - startTicks) * usPerTick);
    }
    snprintf(line, sizeof(line),
             "{\"rank\": %d, \"nranks\": %d, \"host\": \"%s\", \"pid\": %d, \"comm\": \"%016" PRIx64
             "\", \"name\": \"%s\", \"seq\": %" PRIu64 ", \"call\": \"%s\", \"signature\": \"%s\", \"count\": %" PRIu64
             ", \"dtype\": \"%s\", \"memory\": \"%s\", \"start_us\": %" PRId64 ", \"end_us\": %" PRId64
             ", \"result\": \"%s\"%s}\n",
             who_.rank, who_.nranks, escaped(who_.host).c_str(), static_cast<int>(getpid()), who_.commMagic,
             escaped(who_.commName).c_str(), r.sequence, apiCallName(r.collective).c_str(),
             describeCall(r).c_str(), r.count,
             validDataType(r.dtype) ? dtypeName(static_cast<DataType>(r.dtype)) : "?",
             e.onDevice.load(std::memory_order_relaxed) ? "device" : "host",
             toWallUs(startTicks), endUs, endUs == 0 ? "in_progress" : resultName(result),
             chosen);
    out += line;
  }
  return out;
}

void FlightRecorder::write(const char* why, bool toLogWithoutFile) const {
  if (!ring_) return;
  const std::string pattern = tunableString("TRACE_FILE");
  const std::string lines = jsonLines();
  if (!pattern.empty()) {
    const std::string path = expandPathPattern(pattern, who_.rank);
    std::ofstream f(path, std::ios::app);
    f << lines;
    if (!f) TUTTI_WARN(kSubsysAll, "rank %d: could not write the flight recorder to %s", who_.rank, path.c_str());
    else TUTTI_WARN(kSubsysAll, "rank %d: flight recorder (%s) written to %s", who_.rank, why, path.c_str());
    return;
  }
  if (!toLogWithoutFile) return;
  TUTTI_WARN(kSubsysAll, "rank %d: flight recorder (%s), last %llu call(s), as JSON lines:\n%s", who_.rank, why,
             static_cast<unsigned long long>(std::min<uint64_t>(calls_.load(), capacity_)), lines.c_str());
}

void FlightRecorder::writeOnFirstError() {
  if (!errorWritten_.exchange(true)) write("error", true);
}

}  // namespace tutti
