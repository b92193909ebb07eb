// What a run of timed calls says one call costs, the same for init's
// calibration (link_probe.h) and the calls a run keeps (kept_calls.h), so
// the model's measured points and its kept ones are read alike; and what
// the slow draws of ranks sharing cores add to that (slowDrawFactor).
#pragma once

#include <algorithm>
#include <utility>
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

// A call past this many times the median stalled: a rank's wait for a peer
// that came late, or a rank off its core for a scheduler's slice.
constexpr double kStallOverMedian = 4;

// The mean of the calls that did not stall: what a run of calls costs a
// call, the slow draws of ranks sharing cores included.
inline double meanWithoutStallsUs(std::vector<double> took) {
  if (took.empty()) return 0;
  std::nth_element(took.begin(), took.begin() + took.size() / 2, took.end());
  const double stall = took[took.size() / 2] * kStallOverMedian;
  double sum = 0;
  size_t kept = 0;
  for (double t : took) {
    if (t > stall) continue;
    sum += t;
    ++kept;
  }
  return sum / static_cast<double>(kept);
}

// What the machine's slow draws add to every call: the median, over runs
// of calls (each a pair of typicalUs and meanWithoutStallsUs), of the mean
// over the typical; at least 1, and 1 where no run timed anything.
inline double slowDrawFactor(const std::vector<std::pair<double, double>>& typicalAndMean) {
  std::vector<double> factors;
  for (const auto& [typical, mean] : typicalAndMean)
    if (typical > 0 && mean > 0) factors.push_back(mean / typical);
  if (factors.empty()) return 1;
  std::nth_element(factors.begin(), factors.begin() + factors.size() / 2, factors.end());
  return std::max(1.0, factors[factors.size() / 2]);
}

}  // namespace tutti
