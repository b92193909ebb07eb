// tutti-perf's output: nccl-tests' table and footer on stdout, and the same
// rows as JSON or CSV when asked. Each row ends with the cost model's choice,
// its predicted time and the out-of-place time over it, so drift shows.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "bench/perf_args.h"

struct PerfResult {
  double timeUs = 0;
  double algBw = 0;  // GB/s, 1e9 bytes
  double busBw = 0;
  long long wrong = 0;
  void fill(size_t bytes, double busFactor) {
    algBw = timeUs > 0 ? static_cast<double>(bytes) / 1e3 / timeUs : 0;
    busBw = algBw * busFactor;
  }
};

struct PerfRow {
  size_t bytes = 0;
  size_t count = 0;
  std::string type;
  std::string op;
  int root = -1;
  PerfResult outOfPlace;
  PerfResult inPlace;
  bool hasInPlace = true;
  // The cost model's choice for the size and its predicted time
  // (tuttiCommLastChoice): empty where it made none (sends, device calls).
  std::string algorithm;
  int nchannels = 0;  // 0: on the host block
  double predictedUs = 0;
};

class PerfReport {
 public:
  explicit PerfReport(const PerfArgs& args) : args_(args) {}
  // `initMs`: the slowest rank's init call, in milliseconds.
  void printHeader(const PerfArgs& args, int nranks, double initMs);
  void addRow(const PerfRow& row);
  // Prints the footer and writes JSON/CSV; non-zero when any result was wrong.
  int finish();

 private:
  const PerfArgs& args_;
  std::mutex mutex_;
  std::vector<PerfRow> rows_;
  int nranks_ = 0;
  double initMs_ = 0;
};
