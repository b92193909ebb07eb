// A device all-reduce timed on the emulated device, built the same way
// against two versions of tutti (bench/before_after/p2p.sh): the same
// emulated runtime is installed in both, so only the library's path
// differs. Ranks are forked processes of one node; their devices reach
// each other, so tutti takes P2P (CUDA IPC between processes).
//   device_allreduce NRANKS BYTES ITERS
// prints, from rank 0: ranks bytes us_per_call busbw_GBps
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "src/device/emulated_device.h"
#include "tutti/tutti.h"

namespace {

int rankMain(int rank, int nranks, const tuttiUniqueId& id, size_t bytes, int iters) {
  auto* dev = new tutti::EmulatedDevice(1);
  tutti::setDeviceRuntime(dev);
  if (!dev->setDevice(0).ok()) return 2;
  tuttiComm_t comm = nullptr;
  if (tuttiCommInitRank(&comm, nranks, id, rank) != tuttiSuccess) {
    fprintf(stderr, "rank %d: init: %s\n", rank, tuttiGetLastError(nullptr));
    return 3;
  }
  const size_t count = bytes / sizeof(float);
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>((i + rank) % 17);
  void* send = dev->alloc(bytes);
  void* recv = dev->alloc(bytes);
  dev->upload(send, host.data(), bytes);
  tutti::DeviceStream stream = *dev->createStream();
  auto run = [&](int n) {
    for (int i = 0; i < n; ++i)
      if (tuttiAllReduce(send, recv, count, tuttiFloat32, tuttiSum, comm, stream) != tuttiSuccess) return false;
    return dev->synchronize(stream).ok();
  };
  if (!run(2)) return 4;
  auto start = std::chrono::steady_clock::now();
  if (!run(iters)) return 4;
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iters;
  // Checked once: every element is the sum over ranks.
  dev->download(host.data(), recv, bytes);
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += static_cast<float>((i + r) % 17);
    if (host[i] != want) {
      fprintf(stderr, "rank %d: element %zu is %g, not %g\n", rank, i, host[i], want);
      return 5;
    }
  }
  if (rank == 0) {
    printf("%d %zu %.1f %.3f\n", nranks, bytes, us, 2.0 * (nranks - 1) / nranks * bytes / us / 1e3);
    fflush(stdout);  // the rank leaves by _exit
  }
  tuttiCommDestroy(comm);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: device_allreduce NRANKS BYTES ITERS\n");
    return 2;
  }
  const int nranks = atoi(argv[1]);
  const size_t bytes = strtoull(argv[2], nullptr, 10);
  const int iters = atoi(argv[3]);
  setenv("TUTTI_SOCKET_IFNAME", "lo", 0);
  tuttiUniqueId id;
  if (tuttiGetUniqueId(&id) != tuttiSuccess) return 2;
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) _exit(rankMain(r, nranks, id, bytes, iters));
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  return failed;
}
