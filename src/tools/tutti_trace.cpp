// tutti-trace: merges the flight recorders of every rank (TUTTI_TRACE_FILE,
// JSON lines) and says where the ranks part: the first collective number at
// which ranks recorded different calls, the ranks that are behind (their
// last collective is older than the others'), and the calls that did not
// end well. Sends and receives are left out: they involve two ranks and
// carry the last collective's number.
//
//   tutti-trace FILE...      (e.g. tutti-trace /tmp/trace.*.jsonl)
//   tutti-trace --drift FILE...   the cost model's predictions beside the
//                                 times taken (src/tools/trace_drift.h)
//
// Exit status: 0 when the ranks agree and all are level (--drift: when
// there were calls to compare), 1 when they part, 2 on bad input.
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/common/json.h"
#include "src/common/number_ranges.h"
#include "src/tools/trace_drift.h"

namespace {

struct Call {
  std::string signature;  // "tuttiAllReduce(count 1024 float, sum)"
  std::string result;
  double startUs = 0;
};

// One communicator: rank -> sequence number -> call.
struct Comm {
  std::string name;
  int nranks = 0;
  std::map<int, std::map<uint64_t, Call>> ranks;
  std::map<int, std::string> where;  // rank -> "host pid N"
};


// Prints what it finds; true when the ranks part.
bool report(const std::string& id, const Comm& comm) {
  std::printf("communicator %s%s: %d rank(s), %zu with a record\n", id.c_str(),
              comm.name.empty() ? "" : (" (" + comm.name + ")").c_str(), comm.nranks, comm.ranks.size());
  bool parted = false;
  std::vector<int> missing;
  for (int r = 0; r < comm.nranks; ++r)
    if (!comm.ranks.count(r)) missing.push_back(r);
  if (!missing.empty()) {
    std::printf("  no record from %s\n", tutti::ranksWord(missing).c_str());
    parted = true;
  }
  // The window every rank still holds: from the latest first call to the last call seen.
  uint64_t from = 0, newest = 0;
  for (const auto& [rank, calls] : comm.ranks) {
    from = std::max(from, calls.begin()->first);
    newest = std::max(newest, calls.rbegin()->first);
  }
  for (uint64_t seq = from; seq <= newest; ++seq) {
    std::map<std::string, std::vector<int>> bySignature;
    for (const auto& [rank, calls] : comm.ranks) {
      auto it = calls.find(seq);
      if (it != calls.end()) bySignature[it->second.signature].push_back(rank);
    }
    if (bySignature.size() <= 1) continue;
    std::printf("  call #%llu differs:\n", static_cast<unsigned long long>(seq));
    for (const auto& [signature, ranks] : bySignature)
      std::printf("    %s called %s\n", tutti::ranksWord(ranks).c_str(), signature.c_str());
    parted = true;
    break;  // later calls follow from the first difference
  }
  std::map<uint64_t, std::vector<int>> byLast;
  for (const auto& [rank, calls] : comm.ranks) byLast[calls.rbegin()->first].push_back(rank);
  if (byLast.size() > 1) {
    for (const auto& [last, ranks] : byLast) {
      if (last == newest) continue;
      const Call& c = comm.ranks.at(ranks.front()).at(last);
      std::printf("  %s behind: last call #%llu %s (%s), others reached #%llu", tutti::ranksWord(ranks).c_str(),
                  static_cast<unsigned long long>(last), c.signature.c_str(), c.result.c_str(),
                  static_cast<unsigned long long>(newest));
      std::printf(ranks.size() == 1 ? " [%s]\n" : "\n", comm.where.at(ranks.front()).c_str());
    }
    parted = true;
  }
  std::map<std::string, std::vector<int>> unended;  // "#seq signature" -> ranks
  for (const auto& [rank, calls] : comm.ranks)
    for (const auto& [seq, c] : calls)
      if (c.result != "ok")
        unended["#" + std::to_string(seq) + " " + c.signature + ": " + c.result].push_back(rank);
  for (const auto& [what, ranks] : unended) std::printf("  %s: call %s\n", tutti::ranksWord(ranks).c_str(), what.c_str());
  if (!parted) std::printf("  every rank recorded the same calls, up to #%llu\n", static_cast<unsigned long long>(newest));
  return parted;
}

}  // namespace

int main(int argc, char** argv) {
  const bool drift = argc > 1 && std::string(argv[1]) == "--drift";
  if (argc < 2 + drift || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: tutti-trace [--drift] FILE...  (flight recorders written with TUTTI_TRACE_FILE)\n");
    return 2;
  }
  std::map<std::string, Comm> comms;
  tutti::DriftReport driftReport;
  for (int i = 1 + drift; i < argc; ++i) {
    std::ifstream f(argv[i]);
    if (!f) {
      std::fprintf(stderr, "tutti-trace: cannot read %s\n", argv[i]);
      return 2;
    }
    std::string line;
    for (int n = 1; std::getline(f, line); ++n) {
      if (line.empty()) continue;
      auto parsed = tutti::parseJson(line);
      if (!parsed.ok() || !parsed->is_object()) {
        std::fprintf(stderr, "tutti-trace: %s line %d is not a flight recorder record\n", argv[i], n);
        return 2;
      }
      const tutti::Json& j = *parsed;
      if (drift) {
        driftReport.add(j);
        continue;
      }
      using tutti::jsonNumber;
      using tutti::jsonString;
      // Sends and receives involve two ranks and carry the last collective's
      // number: only collectives are compared across ranks.
      const std::string call = jsonString(j, "call");
      if (call == "tuttiSend" || call == "tuttiRecv") continue;
      Comm& comm = comms[jsonString(j, "comm")];
      comm.name = jsonString(j, "name");
      comm.nranks = static_cast<int>(jsonNumber(j, "nranks"));
      const int rank = static_cast<int>(jsonNumber(j, "rank"));
      comm.where[rank] = jsonString(j, "host") + " pid " + std::to_string(static_cast<long>(jsonNumber(j, "pid")));
      // Several writes of one recorder overlap: the latest line of a call wins.
      comm.ranks[rank][static_cast<uint64_t>(jsonNumber(j, "seq"))] =
          Call{jsonString(j, "signature"), jsonString(j, "result"), jsonNumber(j, "start_us")};
    }
  }
  if (drift) {
    if (driftReport.print()) return 0;
    std::fprintf(stderr, "tutti-trace: no priced call that ended well\n");
    return 2;
  }
  if (comms.empty()) {
    std::fprintf(stderr, "tutti-trace: no records\n");
    return 2;
  }
  bool parted = false;
  for (const auto& [id, comm] : comms) parted |= report(id, comm);
  return parted ? 1 : 0;
}
