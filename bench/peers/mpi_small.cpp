// Open MPI's side of bench/small_vs_openmpi.sh, timed as tutti-perf times:
// W untimed calls, a barrier, N calls back to back; each rank's mean time
// per call, averaged over ranks. Float32 sum all-reduce (out of place),
// broadcast from rank 0 (in place) and barrier, 8 B to 64 KiB. Prints
// "collective bytes time_us busbw_gbs" rows (nccl-tests' bus bandwidth).
//   mpi_small [ITERS] [COLLECTIVE BYTES]: with the last two, that row only
//   (bench/before_after/hot_path.sh times one size at a time).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

template <class Call>
double meanUs(int warmup, int iters, Call call) {
  for (int i = 0; i < warmup; ++i) call();
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) call();
  const double mine = (MPI_Wtime() - t0) * 1e6 / iters;
  double sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return sum / n;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  const int warmup = iters / 10;
  const char* only = argc > 3 ? argv[2] : nullptr;  // one collective and size
  const size_t onlyBytes = only ? strtoull(argv[3], nullptr, 10) : 0;
  auto wanted = [&](const char* coll, size_t bytes) {
    return !only || (strcmp(only, coll) == 0 && (bytes == onlyBytes || bytes == 0));
  };
  const size_t maxBytes = 64 << 10;
  std::vector<float> in(maxBytes / 4, float(me + 1)), out(maxBytes / 4);
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 2) {
    if (!wanted("allreduce", bytes)) continue;
    const int count = static_cast<int>(bytes / 4);
    const double us = meanUs(warmup, iters, [&] {
      MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
    if (out[count - 1] != n * (n + 1) / 2.0f) fprintf(stderr, "rank %d: wrong all-reduce result\n", me);
    if (me == 0) printf("allreduce %zu %.3f %.3f\n", bytes, us, bytes / us / 1e3 * 2.0 * (n - 1) / n);
  }
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 2) {
    if (!wanted("broadcast", bytes)) continue;
    const double us = meanUs(warmup, iters, [&] { MPI_Bcast(in.data(), int(bytes / 4), MPI_FLOAT, 0, MPI_COMM_WORLD); });
    if (me == 0) printf("broadcast %zu %.3f %.3f\n", bytes, us, bytes / us / 1e3);
  }
  if (wanted("barrier", 0)) {
    const double us = meanUs(warmup, iters, [] { MPI_Barrier(MPI_COMM_WORLD); });
    if (me == 0) printf("barrier 0 %.3f 0\n", us);
  }
  MPI_Finalize();
  return 0;
}
