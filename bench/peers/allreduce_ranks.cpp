// Float32 sum all-reduce, one process per rank, for runs across nodes
// (bench/across_nodes.sh): Open MPI when built with mpicxx, Gloo with
// -DWITH_GLOO, tutti with -DWITH_TUTTI (its own choices: tutti timed exactly
// as the peers are). Timed with the peers' method (../shared/peers/bench_common.h:
// batches of back-to-back calls, the slowest rank's, the median batch);
// every size's result is checked element by element once after timing.
//
//   allreduce_ranks_mpi LABEL                          (under mpirun)
//   allreduce_ranks_gloo LABEL RANK SIZE STORE_DIR HOST
//     Gloo: rendezvous through a FileStore in STORE_DIR (a directory all
//     ranks see), the TCP device bound to HOST (the rank's node address),
//     a full mesh of TCP pairs.
//   allreduce_ranks_tutti LABEL                        (launcher variables)
// Rank 0 prints CSV rows (bench_common.h's columns), LABEL as the transport.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.h"

#if defined(WITH_TUTTI)
#include <tutti/tutti.h>
#elif defined(WITH_GLOO)
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#else
#include <mpi.h>
#endif

namespace {

// 8 B to 64 MiB: every power of 8 and the sizes of issue 35's table.
const std::vector<size_t> kSizes = {8,         64,        512,        4 << 10,    32 << 10,  64 << 10,
                                    256 << 10, 1 << 20,   4 << 20,    16 << 20,   64 << 20};

// Every element of the sum of ranks' (rank + 1 + i % 7), exact in float32.
void fill(std::vector<float>& v, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) v[i] = float(rank + 1 + int(i % 7));
}

void check(const std::vector<float>& v, size_t count, int n, size_t bytes) {
  for (size_t i = 0; i < count; ++i) {
    const float want = float(n * (n + 1) / 2 + n * int(i % 7));
    if (v[i] != want)
      throw std::runtime_error("all-reduce of " + std::to_string(bytes) + " bytes: element " + std::to_string(i) +
                               " is " + std::to_string(v[i]) + ", want " + std::to_string(want));
  }
}

template <typename AllReduce>
void run(bench::Comm& c, const char* peer, const std::string& label, AllReduce allreduce) {
  const size_t most = kSizes.back() / sizeof(float);
  std::vector<float> send(most), recv(most);
  if (c.rank == 0) bench::print_header();
  for (size_t bytes : kSizes) {
    const size_t count = bytes / sizeof(float);
    fill(send, count, c.rank);
    auto t = bench::time_op(c, [&] { allreduce(send.data(), recv.data(), count); });
    allreduce(send.data(), recv.data(), count);
    check(recv, count, c.size, bytes);
    if (c.rank == 0) bench::print_row(peer, c.size, label, bench::Op::kAllreduce, bytes, t);
  }
}

}  // namespace

#if defined(WITH_TUTTI)
int main(int argc, char** argv) {
  tuttiComm_t comm;
  if (tuttiCommInitFromEnv(&comm) != tuttiSuccess) {
    std::fprintf(stderr, "tuttiCommInitFromEnv: %s\n", tuttiGetLastError(nullptr));
    return 1;
  }
  bench::Comm c;
  tuttiCommUserRank(comm, &c.rank);
  tuttiCommCount(comm, &c.size);
  auto must = [&](tuttiResult_t r) {
    if (r != tuttiSuccess) throw std::runtime_error(tuttiGetLastError(comm));
  };
  c.barrier = [&] { must(tuttiBarrier(comm, nullptr)); };
  c.max_all = [&](std::vector<double>& v) {
    must(tuttiAllReduce(v.data(), v.data(), v.size(), tuttiFloat64, tuttiMax, comm, nullptr));
  };
  int rc = 0;
  try {
    run(c, "tutti", argc > 1 ? argv[1] : "default", [&](float* in, float* out, size_t count) {
      must(tuttiAllReduce(in, out, count, tuttiFloat32, tuttiSum, comm, nullptr));
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", c.rank, e.what());
    rc = 1;
  }
  tuttiCommDestroy(comm);
  return rc;
}
#elif defined(WITH_GLOO)
int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s LABEL RANK SIZE STORE_DIR HOST\n", argv[0]);
    return 2;
  }
  const std::string label = argv[1];
  const int rank = std::atoi(argv[2]), size = std::atoi(argv[3]);
  try {
    gloo::rendezvous::FileStore fileStore(argv[4]);
    gloo::rendezvous::PrefixStore store("allreduce_ranks", fileStore);
    gloo::transport::tcp::attr attr;
    attr.hostname = argv[5];
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(std::chrono::seconds(300));
    context->connectFullMesh(store, device);
    std::shared_ptr<gloo::Context> ctx = context;
    bench::Comm c;
    c.rank = rank;
    c.size = size;
    c.barrier = [&] {
      gloo::BarrierOptions o(ctx);
      gloo::barrier(o);
    };
    c.max_all = [&](std::vector<double>& v) {
      std::vector<double> all(v.size() * size);
      gloo::AllgatherOptions o(ctx);
      o.setInput(v.data(), v.size());
      o.setOutput(all.data(), all.size());
      gloo::allgather(o);
      for (size_t i = 0; i < v.size(); ++i)
        for (int r = 0; r < size; ++r) v[i] = std::max(v[i], all[r * v.size() + i]);
    };
    // Options built per call, as PyTorch's Gloo backend does.
    run(c, "gloo", label, [&](float* in, float* out, size_t count) {
      gloo::AllreduceOptions o(ctx);
      o.setInput(in, count);
      o.setOutput(out, count);
      void (*sum)(void*, const void*, const void*, size_t) = &gloo::sum<float>;
      o.setReduceFunction(sum);
      gloo::allreduce(o);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
  return 0;
}
#else
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  bench::Comm c;
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.size);
  c.barrier = [] { MPI_Barrier(MPI_COMM_WORLD); };
  c.max_all = [](std::vector<double>& v) {
    MPI_Allreduce(MPI_IN_PLACE, v.data(), int(v.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  };
  int rc = 0;
  try {
    run(c, "openmpi", argc > 1 ? argv[1] : "default", [](float* in, float* out, size_t count) {
      MPI_Allreduce(in, out, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", c.rank, e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
#endif
