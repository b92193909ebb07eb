#include "src/common/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "src/common/config.h"
#include "src/common/name_list.h"

namespace tutti {
namespace log_detail {

std::atomic<int> gLevel{-1};
std::atomic<uint32_t> gSubsys{kSubsysAll};

thread_local int tRank = -1;

namespace {
std::mutex gMutex;
FILE* gFile = nullptr;

struct SubsysName {
  const char* name;
  uint32_t bit;
};
constexpr SubsysName kSubsysNames[] = {
    {"INIT", kSubsysInit}, {"COLL", kSubsysColl},           {"P2P", kSubsysP2P},
    {"NET", kSubsysNet},   {"SHM", kSubsysShm},             {"BOOTSTRAP", kSubsysBootstrap},
    {"TUNING", kSubsysTuning}, {"ENV", kSubsysEnv},         {"ALL", kSubsysAll},
};

const char* levelName(LogLevel l) {
  switch (l) {
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
    default: return "";
  }
}

void readConfigLocked() {
  std::string level = tunableString("DEBUG");
  int l = 0;
  if (level == "WARN") l = 1;
  else if (level == "INFO") l = 2;
  else if (level == "TRACE") l = 3;
  NameList subsys(tunableString("DEBUG_SUBSYS"));
  uint32_t mask = 0;
  for (const auto& s : kSubsysNames)
    if (s.bit != kSubsysAll && subsys.matches(s.name)) mask |= s.bit;
  // "ALL" switches everything on, but "^X" must not count as naming ALL.
  if (!subsys.exclude() && subsys.matches("ALL")) mask = kSubsysAll;
  if (gFile && gFile != stderr) fclose(gFile);
  gFile = stderr;
  std::string file = tunableString("DEBUG_FILE");
  if (!file.empty()) {
    FILE* f = fopen(expandPathPattern(file).c_str(), "a");
    if (f) gFile = f;
  }
  gSubsys.store(mask, std::memory_order_relaxed);
  gLevel.store(l, std::memory_order_relaxed);
}
}  // namespace

void init() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gLevel.load() < 0) readConfigLocked();
}

void write(LogLevel level, uint32_t subsys, const char* fmt, ...) {
  (void)subsys;
  static char host[64] = {0};
  if (!host[0]) gethostname(host, sizeof(host) - 1);
  char head[160];
  const int n = snprintf(head, sizeof(head), "%s:%d:%ld [%d] tutti %s ", host, getpid(),
                         static_cast<long>(syscall(SYS_gettid)), tRank, levelName(level));
  std::string line(head, n > 0 ? std::min<size_t>(static_cast<size_t>(n), sizeof(head) - 1) : 0);
  // As long as the message is: init's calibration line runs past 2 KiB
  // with every algorithm's kept sizes, and a cut line loses its end.
  va_list ap, measure;
  va_start(ap, fmt);
  va_copy(measure, ap);
  const int body = vsnprintf(nullptr, 0, fmt, measure);
  va_end(measure);
  if (body > 0) {
    const size_t at = line.size();
    line.resize(at + static_cast<size_t>(body) + 1);
    vsnprintf(&line[at], static_cast<size_t>(body) + 1, fmt, ap);
    line.resize(at + static_cast<size_t>(body));
  }
  va_end(ap);
  std::lock_guard<std::mutex> lock(gMutex);
  fprintf(gFile ? gFile : stderr, "%s\n", line.c_str());
  fflush(gFile ? gFile : stderr);
}

}  // namespace log_detail

// Expands %h (host) and %p (pid) in a TUTTI_DEBUG_FILE pattern.
std::string expandPathPattern(const std::string& pattern, int rank) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[i + 1];
      if (c == 'h') {
        char host[256] = {0};
        gethostname(host, sizeof(host) - 1);
        out += host;
        ++i;
        continue;
      }
      if (c == 'p') {
        out += std::to_string(getpid());
        ++i;
        continue;
      }
      if (c == 'r' && rank >= 0) {
        out += std::to_string(rank);
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

void reloadLogConfig() {
  std::lock_guard<std::mutex> lock(log_detail::gMutex);
  log_detail::readConfigLocked();
}

}  // namespace tutti
