// Experiment (stop 64, not part of the build): a 4-process all-reduce on one host through
// process_vm_readv. g++ -O2 -march=native -o cma_ar cma_allreduce.cpp; ./cma_ar 4 13631488 30 65536
// (ranks, bytes, iterations, piece bytes). Results: ../../calls_beside_compute.md.
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
struct Shared {
  std::atomic<int> arrived[64];
  pid_t pid[8];
  float* in[8];
  float* out[8];
};
static void barrier(Shared* s, int n, int me, int gen) {
  s->arrived[me * 16].store(gen, std::memory_order_release);
  for (int q = 0; q < n; ++q)
    while (s->arrived[q * 16].load(std::memory_order_acquire) < gen) sched_yield();
}
int main(int argc, char** argv) {
  int n = atoi(argv[1]);
  size_t count = strtoull(argv[2], nullptr, 0) / 4;
  int iters = atoi(argv[3]);
  size_t chunk = argc > 4 ? strtoull(argv[4], nullptr, 0) / 4 : 16384;
  Shared* s = (Shared*)mmap(nullptr, sizeof(Shared) * 4, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  for (int me = 0; me < n; ++me) {
    if (fork() != 0) continue;
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);
    std::vector<float> in(count), out(count), tmp(chunk);
    for (size_t i = 0; i < count; ++i) in[i] = me + 1 + (i % 7);
    s->pid[me] = getpid(); s->in[me] = in.data(); s->out[me] = out.data();
    int gen = 0;
    barrier(s, n, me, ++gen);
    double best = 1e9, sum = 0;
    for (int it = 0; it < iters; ++it) {
      auto t0 = std::chrono::steady_clock::now();
      barrier(s, n, me, ++gen);
      size_t b0 = count * me / n, b1 = count * (me + 1) / n;
      for (size_t off = b0; off < b1; off += chunk) {
        size_t len = std::min(chunk, b1 - off);
        float* o = out.data() + off;
        memcpy(o, in.data() + off, len * 4);
        for (int q = 0; q < n; ++q) {
          if (q == me) continue;
          iovec l{tmp.data(), len * 4}, r{s->in[q] + off, len * 4};
          if (process_vm_readv(s->pid[q], &l, 1, &r, 1, 0) != (ssize_t)(len * 4)) { perror("readv"); _exit(1); }
          for (size_t i = 0; i < len; ++i) o[i] += tmp[i];
        }
      }
      barrier(s, n, me, ++gen);
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        size_t c0 = count * q / n, c1 = count * (q + 1) / n;
        iovec l{out.data() + c0, (c1 - c0) * 4}, r{s->out[q] + c0, (c1 - c0) * 4};
        if (process_vm_readv(s->pid[q], &l, 1, &r, 1, 0) != (ssize_t)((c1 - c0) * 4)) { perror("readv2"); _exit(1); }
      }
      barrier(s, n, me, ++gen);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (it > 0) { best = std::min(best, us); sum += us; }
    }
    // check
    float expect0 = 0; for (int q = 0; q < n; ++q) expect0 += q + 1;
    for (size_t i = 0; i < count; ++i) if (out[i] != expect0 + n * (i % 7)) { printf("rank %d wrong at %zu\n", me, i); break; }
    if (me == 0) printf("n %d bytes %zu mean %.0f us best %.0f us\n", n, count * 4, sum / (iters - 1), best);
    fflush(stdout); _exit(0);
  }
  for (int i = 0; i < n; ++i) wait(nullptr);
}
