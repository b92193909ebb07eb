#include "tests/device/gpu_probe.h"

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tutti_test {

std::string inChild(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string why = body();
    const char* p = why.data();
    for (size_t left = why.size(); left > 0;) {
      ssize_t n = write(fds[1], p, left);
      if (n <= 0) _exit(2);
      p += n;
      left -= static_cast<size_t>(n);
    }
    _exit(why.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return out + " (child killed by signal " + std::to_string(WTERMSIG(status)) + ")";
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && out.empty())
    return "child exited with status " + std::to_string(WEXITSTATUS(status));
  return out;
}

bool gpuAvailable(std::string* reason) {
  *reason = inChild([] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    return e != cudaSuccess ? std::string("no usable GPU: ") + cudaGetErrorString(e)
           : n == 0         ? std::string("no usable GPU: none visible")
                            : std::string();
  });
  return reason->empty();
}

}  // namespace tutti_test
