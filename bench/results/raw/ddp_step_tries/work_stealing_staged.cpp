// Prototype (stop 72): a one-host all-reduce of 4 forked ranks through a shared
// staging area, its reduction cut into blocks that whichever rank runs takes
// (a counter), so no rank waits for one particular host-mate to get a core
// between the copy in and the copy out. Two waits a call, on futexes.
//   g++ -O3 -march=native -o /tmp/work_stealing_staged work_stealing_staged.cpp
//   /tmp/work_stealing_staged MIB CALLS MODE BLOCK_KIB   (first 3 calls untimed;
//   MODE 0: sleep at once, 1: poll 2000 times, yielding every 100th, then sleep)
// Alternated with tutti-perf by the loop in ddp_step_tries.md.
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sched.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
struct alignas(64) Ctr { std::atomic<int> v; char pad[60]; };
static void fwait(std::atomic<int>* a, int val) { syscall(SYS_futex, a, FUTEX_WAIT, val, nullptr, nullptr, 0); }
static void fwake(std::atomic<int>* a) { syscall(SYS_futex, a, FUTEX_WAKE, 1 << 30, nullptr, nullptr, 0); }
int mode;
static void waitFor(std::atomic<int>* a, int want) {
  int spins = 0;
  for (;;) {
    int v = a->load(std::memory_order_acquire);
    if (v >= want) return;
    if (mode == 1 && spins < 2000) { ++spins; if (spins % 100 == 0) sched_yield(); continue; }
    fwait(a, v);
  }
}
int main(int argc, char** argv) {
  const int N = 4; size_t S = (size_t)(atof(argv[1]) * 1048576); int iters = atoi(argv[2]);
  mode = argc > 3 ? atoi(argv[3]) : 0;
  size_t block = (argc > 4 ? atoi(argv[4]) : 256) * 1024 / 4;
  size_t n = S / 4;
  size_t B = (n + block - 1) / block;
  char* shm = (char*)mmap(nullptr, 64 * 8 + (N + 1) * n * 4, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  Ctr* c = (Ctr*)shm;  // 0: arrived, 1: claimed, 2: done
  float* stage = (float*)(shm + 64 * 8);
  float* R = stage + N * n;
  for (int r = 0; r < N; ++r) if (fork() == 0) {
    std::vector<float> in(n), out(n);
    for (size_t i = 0; i < n; ++i) in[i] = r + i % 7;
    double sum = 0, best = 1e9;
    for (int it = 0; it < iters; ++it) {
      auto t0 = std::chrono::steady_clock::now();
      memcpy(stage + r * n, in.data(), n * 4);
      if (c[0].v.fetch_add(1) + 1 == (it + 1) * N) fwake(&c[0].v);
      waitFor(&c[0].v, (it + 1) * N);
      for (;;) {
        int b = c[1].v.fetch_add(1) - it * (int)(B + N);
        if (b >= (int)B) break;
        size_t lo = b * block, hi = std::min(n, lo + block);
        const float *a0 = stage, *a1 = stage + n, *a2 = stage + 2 * n, *a3 = stage + 3 * n;
        for (size_t i = lo; i < hi; ++i) R[i] = ((a0[i] + a1[i]) + a2[i]) + a3[i];
        if (c[2].v.fetch_add(1) + 1 == (it + 1) * (int)B) fwake(&c[2].v);
      }
      waitFor(&c[2].v, (it + 1) * (int)B);
      memcpy(out.data(), R, n * 4);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (it >= 3) { sum += us; best = std::min(best, us); }
    }
    for (size_t i = 0; i < n; i += 4099) { float want = 0 + 1 + 2 + 3 + 4 * (i % 7); if (out[i] != want) { printf("rank %d wrong at %zu: %f\n", r, i, out[i]); break; } }
    if (r == 0) printf("S %.1f MiB mode %d block %zu KiB: mean %.0f us best %.0f us\n", S / 1048576.0, mode, block * 4 / 1024, sum / (iters - 3), best);
    fflush(stdout); _exit(0);
  }
  for (int r = 0; r < N; ++r) wait(nullptr);
}
