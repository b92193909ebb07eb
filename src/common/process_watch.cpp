#include "src/common/process_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tutti {

ProcessWatch::~ProcessWatch() {
  if (pidfd_ >= 0) close(pidfd_);
}

void ProcessWatch::watch(int pid) {
  if (pidfd_ >= 0) close(pidfd_);
  pid_ = pid;
  pidfd_ = -1;
#ifdef SYS_pidfd_open
  if (pid > 0 && pid != getpid()) pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#endif
}

bool ProcessWatch::alive() const {
  if (pid_ <= 0 || pid_ == getpid()) return true;
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    return poll(&p, 1, 0) == 0;  // readable once the process has exited
  }
  // Without pidfds: a zombie still answers kill(); its state in /proc says Z.
  return processState(pid_) != ProcessState::kGone;
}

ProcessState processState(int pid) {
  if (pid <= 0) return ProcessState::kGone;
  if (kill(pid, 0) != 0 && errno == ESRCH) return ProcessState::kGone;
  char path[64], buf[256] = {0};
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = fopen(path, "r");
  if (!f) return ProcessState::kGone;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  // "pid (comm) S ...": the name may hold spaces and parentheses.
  const char* close = static_cast<const char*>(memrchr(buf, ')', n));
  if (!close || close[1] != ' ') return ProcessState::kRunning;
  switch (close[2]) {
    case 'Z': case 'X': case 'x': return ProcessState::kGone;
    case 'T': case 't': return ProcessState::kStopped;
    default: return ProcessState::kRunning;
  }
}

const char* processStateName(ProcessState s) {
  switch (s) {
    case ProcessState::kRunning: return "alive";
    case ProcessState::kStopped: return "stopped";
    case ProcessState::kGone: return "gone";
  }
  return "?";
}

}  // namespace tutti
