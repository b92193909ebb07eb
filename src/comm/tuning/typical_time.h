// What a run of timed calls says one call costs, the same for init's
// calibration (link_probe.h) and the calls a run keeps (kept_calls.h), so
// the model's measured points and its kept ones are read alike.
#pragma once

#include <algorithm>
#include <vector>

namespace tutti {

// The mean of the calls without the slowest third (one at least, of two
// or more). Ranks sharing cores make single calls wander by several times:
// the slowest are a rank's wait for a late peer, and the single fastest is
// a call this rank came to last, when the others had done its work (4 x 1
// on veth: one 64 KiB call of 37 us kept as the price of calls of 190).
inline double typicalUs(std::vector<double> took) {
  if (took.empty()) return 0;
  std::sort(took.begin(), took.end());
  const size_t n = took.size();
  const size_t kept = n < 2 ? n : n - std::max<size_t>(1, n / 3);
  double sum = 0;
  for (size_t i = 0; i < kept; ++i) sum += took[i];
  return sum / static_cast<double>(kept);
}

}  // namespace tutti
