// In-place all-reduces as PyTorch makes them, shared by the test on a GPU
// (gpu_collectives_test.cpp) and the one over the emulated CUDA API
// (device_buffers_test.cpp): the counts, where each block lies in one
// allocation (the caching allocator's 512-byte rounding), what each rank
// puts in, and the check of what came back.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace tutti_test::as_torch {

inline constexpr size_t kCounts[] = {1, 1031, (1 << 20) + 3};
inline constexpr size_t kFirstBlock = 512;

inline size_t blockBytes(size_t n) { return (n * sizeof(float) + 511) / 512 * 512; }

// Small integers: every sum is exact, in any order.
inline float input(size_t i, int rank) { return static_cast<float>(static_cast<int>((i * 7 + rank * 3) % 17) - 8); }

inline std::vector<float> inputs(size_t n, int rank) {
  std::vector<float> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = input(i, rank);
  return in;
}

// "" or how many elements are wrong, and the first.
inline std::string check(const std::vector<float>& out, int nranks, const std::string& what) {
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += input(i, r);
    if (out[i] != want && wrong++ == 0) first = i;
  }
  if (!wrong) return "";
  return what + ": " + std::to_string(wrong) + " wrong elements, first [" + std::to_string(first) + "] " +
         std::to_string(out[first]);
}

// tutti's own settings, but for the loopback interface and a short timeout.
inline std::map<std::string, std::string> env(int) {
  return {{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "20"}};
}

}  // namespace tutti_test::as_torch
