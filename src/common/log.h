// Logging: TUTTI_DEBUG=WARN|INFO|TRACE, TUTTI_DEBUG_SUBSYS, TUTTI_DEBUG_FILE.
// Lines read "host:pid:tid [rank] tutti INFO ...". A disabled level costs one
// relaxed load and a compare.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace tutti {

enum class LogLevel : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

enum LogSubsys : uint32_t {
  kSubsysInit = 1u << 0,
  kSubsysColl = 1u << 1,
  kSubsysP2P = 1u << 2,
  kSubsysNet = 1u << 3,
  kSubsysShm = 1u << 4,
  kSubsysBootstrap = 1u << 5,
  kSubsysTuning = 1u << 6,
  kSubsysEnv = 1u << 7,
  kSubsysAll = ~0u,
};

namespace log_detail {
extern std::atomic<int> gLevel;   // -1 until the environment has been read
extern std::atomic<uint32_t> gSubsys;
void init();
void write(LogLevel level, uint32_t subsys, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
extern thread_local int tRank;
inline bool enabled(LogLevel level, uint32_t subsys) {
  int l = gLevel.load(std::memory_order_relaxed);
  if (l < 0) {
    init();
    l = gLevel.load(std::memory_order_relaxed);
  }
  return l >= static_cast<int>(level) && (gSubsys.load(std::memory_order_relaxed) & subsys);
}
}  // namespace log_detail

// The rank shown in log lines of this thread (-1: none). Inline: every
// call sets it.
inline void setLogRank(int rank) { log_detail::tRank = rank; }
// Expands %h (host), %p (pid) and, given a rank, %r in a file name pattern.
std::string expandPathPattern(const std::string& pattern, int rank = -1);
// Re-reads TUTTI_DEBUG* (tests change them between communicators).
void reloadLogConfig();

}  // namespace tutti

#define TUTTI_LOG(level, subsys, ...)                                             \
  do {                                                                            \
    if (::tutti::log_detail::enabled(level, subsys))                              \
      ::tutti::log_detail::write(level, subsys, __VA_ARGS__);                     \
  } while (0)

#define TUTTI_WARN(subsys, ...) TUTTI_LOG(::tutti::LogLevel::kWarn, subsys, __VA_ARGS__)
#define TUTTI_INFO(subsys, ...) TUTTI_LOG(::tutti::LogLevel::kInfo, subsys, __VA_ARGS__)
#define TUTTI_TRACE(subsys, ...) TUTTI_LOG(::tutti::LogLevel::kTrace, subsys, __VA_ARGS__)
