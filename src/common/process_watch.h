// Is a process of this host still running? Used for peers on shared memory,
// whose death no socket reports. A pidfd answers even while the dead process
// is an unreaped zombie (kill(pid, 0) would still succeed then).
#pragma once

namespace tutti {

// What /proc says of a process of this pid namespace.
enum class ProcessState { kRunning, kStopped, kGone };
ProcessState processState(int pid);
const char* processStateName(ProcessState s);

class ProcessWatch {
 public:
  ProcessWatch() = default;
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;
  ~ProcessWatch();

  void watch(int pid);
  bool alive() const;
  int pid() const { return pid_; }

 private:
  int pid_ = 0;
  int pidfd_ = -1;
};

}  // namespace tutti
