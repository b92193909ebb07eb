// TUTTI_DETERMINISTIC=1: all-reduce, reduce and reduce-scatter must give, bit
// for bit, the sequential sum ((x0 + x1) + x2) + x3 in the dtype's own
// arithmetic, which the test computes alone, whatever the algorithm asked
// for, the channel count, the chunk size, the transport (shared memory,
// TCP, both across two pretend hosts) and the memory (host buffers, or
// device buffers of the emulated device). Inputs span twenty binary orders
// of magnitude, so any other grouping of the additions rounds differently.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/half.h"
#include "tests/harness/emulated_case_device.h"
#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

using tutti::bf16ToFloat;
using tutti::floatToBf16;
using tutti::floatToHalf;
using tutti::halfToFloat;

struct Variant {
  const char* name;
  const char* algo;      // TUTTI_ALGO asked for
  int channels;          // TUTTI_NCHANNELS
  const char* buffsize;  // TUTTI_BUFFSIZE: chunks of buffsize / 8
  const char* transport;  // shm, socket, mixed (two pretend hosts, ranks interleaved)
  bool device;           // device buffers on the emulated device
  int ranks = 4;
};

const Variant kVariants[] = {
    {"ring_1ch_small_shm", "ring", 1, "65536", "shm", false},
    {"tree_2ch_mid_shm", "tree", 2, "262144", "shm", false},
    {"ring_3ch_big_socket", "ring", 3, "1048576", "socket", false},
    {"tree_4ch_small_socket", "tree", 4, "65536", "socket", false},
    {"ring_2ch_mid_mixed", "ring", 2, "262144", "mixed", false},
    {"tree_1ch_big_mixed", "tree", 1, "1048576", "mixed", false},
    {"ring_2ch_device_shm", "ring", 2, "262144", "shm", true},
    {"tree_3ch_device_mixed", "tree", 3, "65536", "mixed", true},
    // Other rank counts: two ranks start with x0 + x1 and finish there;
    // odd counts split blocks unevenly. Deterministic all-reduce is a chain
    // under TUTTI_ALGO=tree, a reduce-scatter and all-gather under ring.
    {"ring_1ch_small_shm_2ranks", "ring", 1, "65536", "shm", false, 2},
    {"tree_2ch_small_socket_2ranks", "tree", 2, "65536", "socket", false, 2},
    {"ring_2ch_mid_socket_3ranks", "ring", 2, "262144", "socket", false, 3},
    {"tree_2ch_small_mixed_5ranks", "tree", 2, "65536", "mixed", false, 5},
    // One-shot (small calls' plan): every rank's chunk summed at once, in rank order.
    {"oneshot_shm", "oneshot", 1, "65536", "shm", false},
    {"oneshot_socket_3ranks", "oneshot", 1, "65536", "socket", false, 3},
};

size_t elemSize(tuttiDataType_t t) { return t == tuttiFloat32 ? 4 : 2; }

float toFloat(tuttiDataType_t t, const void* p, size_t i) {
  if (t == tuttiFloat32) return static_cast<const float*>(p)[i];
  uint16_t h = static_cast<const uint16_t*>(p)[i];
  return t == tuttiFloat16 ? halfToFloat(h) : bf16ToFloat(h);
}

void store(tuttiDataType_t t, void* p, size_t i, float v) {
  if (t == tuttiFloat32) static_cast<float*>(p)[i] = v;
  else static_cast<uint16_t*>(p)[i] = t == tuttiFloat16 ? floatToHalf(v) : floatToBf16(v);
}

// Rank r's input: signed values from 2^-10 to 2^10 (inside float16's range
// after four additions).
std::vector<char> inputOf(int rank, tuttiDataType_t t, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + rank);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-10, 10);
  std::vector<char> v(count * elemSize(t));
  for (size_t i = 0; i < count; ++i) store(t, v.data(), i, std::ldexp(mantissa(rng), exponent(rng)));
  return v;
}

// ((x0 + x1) + x2) + x3, each addition rounded to the dtype: what a user
// computes alone (float holds a 16-bit type's sum exactly enough that
// rounding it once is the correctly rounded 16-bit addition).
std::vector<char> sequentialSum(tuttiDataType_t t, size_t count, int nranks, uint64_t seed) {
  std::vector<char> acc = inputOf(0, t, count, seed);
  for (int r = 1; r < nranks; ++r) {
    std::vector<char> x = inputOf(r, t, count, seed);
    for (size_t i = 0; i < count; ++i) store(t, acc.data(), i, toFloat(t, acc.data(), i) + toFloat(t, x.data(), i));
  }
  return acc;
}

std::string firstDifference(tuttiDataType_t t, const char* got, const char* want, size_t count, size_t offset) {
  const size_t es = elemSize(t);
  for (size_t i = 0; i < count; ++i)
    if (std::memcmp(got + i * es, want + (offset + i) * es, es) != 0)
      return "element " + std::to_string(offset + i) + " is " + std::to_string(toFloat(t, got, i)) +
             ", the sequential sum " + std::to_string(toFloat(t, want, offset + i));
  return "";
}

// Runs one call on host buffers or through the emulated device.
struct Buffers {
  EmulatedCaseDevice* dev;
  const void* in(const std::vector<char>& host) {
    if (!dev) return host.data();
    void* d = dev->buffer(0, host.size());
    dev->upload(d, host.data(), host.size());
    return d;
  }
  void* out(std::vector<char>& host) { return dev ? dev->buffer(1, host.size()) : host.data(); }
  std::string finish(std::vector<char>& host) {
    if (!dev) return "";
    std::string err = dev->synchronize();
    dev->download(host.data(), dev->buffer(1, host.size()), host.size());
    return err;
  }
  void* stream() { return dev ? dev->stream() : nullptr; }
  // The result at `at` (host or device memory) into `host`.
  std::string finishAt(const void* at, std::vector<char>& host) {
    std::string err = dev ? dev->synchronize() : "";
    if (dev) dev->download(host.data(), at, host.size());
    else std::memcpy(host.data(), at, host.size());
    return err;
  }
};

std::string runVariant(const RankContext& ctx, const Variant& s) {
  std::unique_ptr<EmulatedCaseDevice> dev;
  if (s.device) dev = std::make_unique<EmulatedCaseDevice>(processDevice());
  tuttiComm_t comm = nullptr;
  std::string err = initComm(ctx, &comm);
  if (!err.empty()) return err;
  Buffers b{dev.get()};
  const int n = ctx.nranks;
  std::string f;
  uint64_t seed = 11;
  for (tuttiDataType_t t : {tuttiFloat32, tuttiFloat16, tuttiBfloat16}) {
    for (size_t count : {size_t{1}, size_t{777}, size_t{65536 + 13}}) {
      const size_t es = elemSize(t);
      const std::string what = std::string("dtype ") + std::to_string(t) + " count " + std::to_string(count);
      // All-reduce.
      std::vector<char> want = sequentialSum(t, count, n, ++seed);
      std::vector<char> mine = inputOf(ctx.rank, t, count, seed), out(count * es);
      tuttiResult_t r = tuttiAllReduce(b.in(mine), b.out(out), count, t, tuttiSum, comm, b.stream());
      std::string e = r != tuttiSuccess ? tuttiGetLastError(comm) : b.finish(out);
      if (e.empty()) e = firstDifference(t, out.data(), want.data(), count, 0);
      if (!e.empty()) f += "allreduce " + what + ": " + e + "\n";
      // In place: the sums pass through scratch while the input is still read.
      const void* inout = b.in(mine);
      r = tuttiAllReduce(inout, const_cast<void*>(inout), count, t, tuttiSum, comm, b.stream());
      e = r != tuttiSuccess ? tuttiGetLastError(comm) : b.finishAt(inout, out);
      if (e.empty()) e = firstDifference(t, out.data(), want.data(), count, 0);
      if (!e.empty()) f += "allreduce in place " + what + ": " + e + "\n";
      // Reduce to the last rank but one (rank 2 of 4: the middle of the chain).
      const int root = n - 2;
      want = sequentialSum(t, count, n, ++seed);
      mine = inputOf(ctx.rank, t, count, seed);
      r = tuttiReduce(b.in(mine), b.out(out), count, t, tuttiSum, root, comm, b.stream());
      e = r != tuttiSuccess ? tuttiGetLastError(comm) : b.finish(out);
      if (e.empty() && ctx.rank == root) e = firstDifference(t, out.data(), want.data(), count, 0);
      if (!e.empty()) f += "reduce " + what + ": " + e + "\n";
      // Reduce-scatter: each rank's block of the sum.
      want = sequentialSum(t, count * n, n, ++seed);
      mine = inputOf(ctx.rank, t, count * n, seed);
      r = tuttiReduceScatter(b.in(mine), b.out(out), count, t, tuttiSum, comm, b.stream());
      e = r != tuttiSuccess ? tuttiGetLastError(comm) : b.finish(out);
      if (e.empty()) e = firstDifference(t, out.data(), want.data(), count, ctx.rank * count);
      if (!e.empty()) f += "reducescatter " + what + ": " + e + "\n";
      // In place: the output is this rank's own block of the input.
      const void* in = b.in(mine);
      char* own = static_cast<char*>(const_cast<void*>(in)) + ctx.rank * count * es;
      r = tuttiReduceScatter(in, own, count, t, tuttiSum, comm, b.stream());
      e = r != tuttiSuccess ? tuttiGetLastError(comm) : b.finishAt(own, out);
      if (e.empty()) e = firstDifference(t, out.data(), want.data(), count, ctx.rank * count);
      if (!e.empty()) f += "reducescatter in place " + what + ": " + e + "\n";
      if (f.size() > 2000) break;
    }
  }
  tuttiCommDestroy(comm);
  return f;
}

RankEnv envOf(const Variant& s, const char* deterministic) {
  return [s, deterministic](int rank) {
    std::map<std::string, std::string> e{{"TUTTI_SOCKET_IFNAME", "lo"},        {"TUTTI_TIMEOUT", "60"},
                                         {"TUTTI_DETERMINISTIC", deterministic}, {"TUTTI_ALGO", s.algo},
                                         {"TUTTI_NCHANNELS", std::to_string(s.channels)},
                                         {"TUTTI_BUFFSIZE", s.buffsize}};
    if (std::string(s.transport) == "socket") e["TUTTI_SHM_DISABLE"] = "1";
    if (std::string(s.transport) == "mixed") e["TUTTI_HOSTID"] = rank % 2 ? "host-b" : "host-a";
    if (s.device) e["TUTTI_P2P_BUFFSIZE"] = s.buffsize;
    return e;
  };
}

class Deterministic : public ::testing::TestWithParam<Variant> {};

TEST_P(Deterministic, EveryReductionIsTheSequentialSumBitForBit) {
  const Variant s = GetParam();
  auto outcomes = runRanks(s.ranks, [s](const RankContext& ctx) { return runVariant(ctx, s); }, envOf(s, "1"), 300);
  EXPECT_EQ(summarize(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Variants, Deterministic, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// The check can fail: without TUTTI_DETERMINISTIC the ring's grouping
// differs from the sequential one, and some element shows it.
TEST(DeterministicOff, TheRingsGroupingDiffersFromTheSequentialSum) {
  const Variant s{"ring_off", "ring", 1, "65536", "shm", false};
  auto outcomes = runRanks(s.ranks, [s](const RankContext& ctx) { return runVariant(ctx, s); }, envOf(s, "0"), 300);
  EXPECT_NE(summarize(outcomes).find("the sequential sum"), std::string::npos);
}

}  // namespace
}  // namespace tutti_test
