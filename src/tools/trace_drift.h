// tutti-trace --drift: the cost model's predicted time beside the time each
// kind of call took, from the flight recorders' records (every rank's):
// per communicator and call (kind, count, dtype), algorithm and channels,
// the median over calls of the call's time (the median over ranks), the prediction, and
// prediction over time, with the kinds off by more than 30% marked. Calls that did
// not end well and calls priced by nothing (sends, receives) are left out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "src/common/json.h"

namespace tutti {

class DriftReport {
 public:
  // One flight recorder record (a JSON line's object).
  void add(const Json& record);
  // Prints the table of every communicator; false when there was nothing to compare.
  bool print() const;

 private:
  // Communicator, then call signature, algorithm and channels, then call number.
  using Kind = std::tuple<std::string, std::string, int>;
  struct Call {
    // Each rank's time: the first to arrive waits for the others, the last
    // for no one; the median lies between, as a loop of calls sees them.
    // By rank: a recorder written twice (a signal, then destroy) repeats its calls.
    std::map<int, double> rankUs;
    double predictedUs = 0;
  };
  std::map<std::string, std::map<Kind, std::map<uint64_t, Call>>> comms_;
  std::map<std::string, std::string> names_;
};

}  // namespace tutti
