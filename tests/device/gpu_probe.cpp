#include "tests/device/gpu_probe.h"

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace tutti_test {

bool gpuAvailable(std::string* reason) {
  int fds[2];
  if (pipe(fds) != 0) {
    *reason = "pipe failed";
    return false;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    std::string why = e != cudaSuccess ? std::string("no usable GPU: ") + cudaGetErrorString(e)
                      : n == 0         ? std::string("no usable GPU: none visible")
                                       : std::string();
    if (write(fds[1], why.data(), why.size()) < 0) _exit(2);
    _exit(why.empty() ? 0 : 1);
  }
  close(fds[1]);
  char buf[256] = {0};
  ssize_t got = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  *reason = got > 0 ? std::string(buf, static_cast<size_t>(got)) : "";
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace tutti_test
