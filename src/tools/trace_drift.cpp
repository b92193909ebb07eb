#include "src/tools/trace_drift.h"

#include <algorithm>
#include <cstdio>

namespace tutti {

namespace {

constexpr double kWithin = 0.3;  // what the model aims at: within 30% of the time taken

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

void DriftReport::add(const Json& j) {
  if (!j.contains("algorithm") || jsonString(j, "result") != "ok") return;
  // took_us has the cycle counter's resolution; start and end are whole microseconds.
  const double tookUs = j.contains("took_us") ? jsonNumber(j, "took_us")
                                              : jsonNumber(j, "end_us") - jsonNumber(j, "start_us");
  const std::string comm = jsonString(j, "comm");
  names_[comm] = jsonString(j, "name");
  const Kind kind{jsonString(j, "signature"), jsonString(j, "algorithm"), static_cast<int>(jsonNumber(j, "channels"))};
  Call& call = comms_[comm][kind][static_cast<uint64_t>(jsonNumber(j, "seq"))];
  call.rankUs[static_cast<int>(jsonNumber(j, "rank"))] = tookUs;
  call.predictedUs = jsonNumber(j, "predicted_us");
}

bool DriftReport::print() const {
  for (const auto& [comm, kinds] : comms_) {
    const std::string& name = names_.at(comm);
    std::printf("communicator %s%s: the cost model's prediction against the time taken (median over ranks, then over calls)\n",
                comm.c_str(), name.empty() ? "" : (" (" + name + ")").c_str());
    std::printf("  %-46s %-9s %3s %6s %12s %12s %8s\n", "call", "algorithm", "ch", "calls", "predicted us", "took us",
                "pred/took");
    int within = 0;
    for (const auto& [kind, calls] : kinds) {
      const auto& [signature, algorithm, channels] = kind;
      std::vector<double> took;
      for (const auto& [seq, c] : calls) {
        std::vector<double> ranks;
        for (const auto& [rank, us] : c.rankUs) ranks.push_back(us);
        took.push_back(tutti::median(ranks));
      }
      const double predicted = calls.rbegin()->second.predictedUs, median = tutti::median(took);
      const double ratio = median > 0 ? predicted / median : 0;
      const bool close = ratio >= 1 - kWithin && ratio <= 1 + kWithin;
      within += close;
      const std::string ch = channels ? std::to_string(channels) : "-";
      std::printf("  %-46s %-9s %3s %6zu %12.2f %12.2f %8.2f%s\n", signature.c_str(), algorithm.c_str(), ch.c_str(),
                  calls.size(), predicted, median, ratio, close ? "" : "  off by more than 30%");
    }
    std::printf("  %d of %zu kind(s) of call within 30%% of the prediction\n", within, kinds.size());
  }
  return !comms_.empty();
}

}  // namespace tutti
