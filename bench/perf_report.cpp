#include "bench/perf_report.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

void printResult(const PerfResult& r) {
  if (r.timeUs >= 10000) printf("  %7.0f", r.timeUs);
  else if (r.timeUs >= 100) printf("  %7.1f", r.timeUs);
  else printf("  %7.2f", r.timeUs);
  printf("  %6.2f  %6.2f  %6lld", r.algBw, r.busBw, r.wrong);
}

// The model's columns: its choice, channels, prediction, and time over it.
void printChoice(const PerfRow& row) {
  if (row.algorithm.empty()) {
    printf("  %9s  %2s  %8s  %6s", "-", "-", "-", "-");
    return;
  }
  const std::string channels = row.nchannels ? std::to_string(row.nchannels) : "-";
  printf("  %9s  %2s  %8.1f  %6.2f", row.algorithm.c_str(), channels.c_str(), row.predictedUs,
         row.predictedUs > 0 ? row.outOfPlace.timeUs / row.predictedUs : 0.0);
}

}  // namespace

void PerfReport::printHeader(const PerfArgs& a, int nranks, double initMs) {
  nranks_ = nranks;
  initMs_ = initMs;
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  printf("# tutti-perf %s: nranks %d (processes %d x threads %d) minBytes %zu maxBytes %zu "
         "step: %g(%s) warmup iters: %d iters: %d validation: %d\n",
         a.collective.c_str(), nranks, a.processes, a.threads, a.minBytes, a.maxBytes,
         a.stepFactor > 1 ? a.stepFactor : static_cast<double>(a.stepBytes),
         a.stepFactor > 1 ? "factor" : "bytes", a.warmup, a.iters, a.check);
  const std::string memory = !a.device ? "host memory"
                             : a.emulateDevice ? "device memory (emulated GPUs, " + std::to_string(a.emulateDevice) +
                                                     " per process)"
                                               : "device memory";
  printf("#\n# Using %s on %s\n# Init: %.1f ms (the slowest rank's tuttiCommInitRank)\n#\n", memory.c_str(), host,
         initMs);
  printf("# %10s  %12s  %8s  %6s  %6s  %27s   %27s   %31s\n", "", "", "", "", "", "out-of-place", "in-place",
         "cost model");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %9s  %2s  %8s  %6s\n", "size",
         "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
         "algorithm", "ch", "predict", "t/pred");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %9s  %2s  %8s  %6s\n", "(B)",
         "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "", "", "(us)",
         "");
  fflush(stdout);
}

void PerfReport::addRow(const PerfRow& row) {
  std::lock_guard<std::mutex> lock(mutex_);
  rows_.push_back(row);
  printf("  %10zu  %12zu  %8s  %6s  %6d", row.bytes, row.count, row.type.c_str(), row.op.c_str(),
         row.root);
  printResult(row.outOfPlace);
  if (row.hasInPlace) printResult(row.inPlace);
  else printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
  printChoice(row);
  printf("\n");
  fflush(stdout);
}

int PerfReport::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  long long wrong = 0;
  double bw = 0;
  int n = 0;
  for (const auto& r : rows_) {
    wrong += r.outOfPlace.wrong + (r.hasInPlace ? r.inPlace.wrong : 0);
    bw += r.outOfPlace.busBw;
    ++n;
    if (r.hasInPlace) {
      bw += r.inPlace.busBw;
      ++n;
    }
  }
  printf("# Out of bounds values : %lld %s\n", wrong, wrong ? "FAILED" : "OK");
  printf("# Avg bus bandwidth    : %g \n#\n", n ? bw / n : 0.0);
  fflush(stdout);
  if (!args_.csvPath.empty()) {
    if (FILE* f = fopen(args_.csvPath.c_str(), "w")) {
      fprintf(f, "collective,nranks,size,count,type,redop,root,placement,time_us,algbw_gbs,busbw_gbs,wrong,"
                 "algorithm,channels,predicted_us\n");
      for (const auto& r : rows_)
        for (int p = 0; p < (r.hasInPlace ? 2 : 1); ++p) {
          const PerfResult& x = p ? r.inPlace : r.outOfPlace;
          fprintf(f, "%s,%d,%zu,%zu,%s,%s,%d,%s,%.3f,%.4f,%.4f,%lld,%s,%d,%.3f\n", args_.collective.c_str(),
                  nranks_, r.bytes, r.count, r.type.c_str(), r.op.c_str(), r.root,
                  p ? "in-place" : "out-of-place", x.timeUs, x.algBw, x.busBw, x.wrong, r.algorithm.c_str(),
                  r.nchannels, r.predictedUs);
        }
      fclose(f);
    }
  }
  if (!args_.jsonPath.empty()) {
    if (FILE* f = fopen(args_.jsonPath.c_str(), "w")) {
      fprintf(f, "{\"collective\": \"%s\", \"nranks\": %d, \"memory\": \"%s\", \"init_ms\": %.3f, \"results\": [",
              args_.collective.c_str(), nranks_,
              !args_.device ? "host" : args_.emulateDevice ? "emulated-device" : "device", initMs_);
      bool first = true;
      for (const auto& r : rows_)
        for (int p = 0; p < (r.hasInPlace ? 2 : 1); ++p) {
          const PerfResult& x = p ? r.inPlace : r.outOfPlace;
          fprintf(f, "%s\n  {\"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", "
                  "\"root\": %d, \"placement\": \"%s\", \"time_us\": %.3f, \"algbw_gbs\": %.4f, "
                  "\"busbw_gbs\": %.4f, \"wrong\": %lld, \"algorithm\": \"%s\", \"channels\": %d, "
                  "\"predicted_us\": %.3f}",
                  first ? "" : ",", r.bytes, r.count, r.type.c_str(), r.op.c_str(), r.root,
                  p ? "in-place" : "out-of-place", x.timeUs, x.algBw, x.busBw, x.wrong, r.algorithm.c_str(),
                  r.nchannels, r.predictedUs);
          first = false;
        }
      fprintf(f, "\n], \"avg_busbw_gbs\": %g, \"wrong\": %lld}\n", n ? bw / n : 0.0, wrong);
      fclose(f);
    }
  }
  return wrong ? 1 : 0;
}
