// The flight recorder and tutti-trace: every rank's last calls written as
// JSON lines (on SIGUSR1, on the first error, at destroy), with the cost
// model's choice and prediction; the merge of all ranks' files naming the
// first call at which they part and the rank that is behind; and --drift,
// the predictions beside the times taken.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/files.h"
#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

// tutti-trace's output and exit status.
std::pair<std::string, int> runTraceTool(const std::string& files) {
  std::string out;
  FILE* p = popen((std::string(TUTTI_TRACE_TOOL) + " " + files + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof(buf), p)) out += buf;
  int status = p ? pclose(p) : -1;
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(FlightRecorder, SignalWritesTheLastCallsAndTheToolNamesTheRankBehind) {
  TempDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  const std::string dir = scratch.path;
  auto outcomes = runRanks(3, [dir](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    std::vector<float> buf(1000, 1.0f);
    for (int i = 0; i < 20; ++i)
      if (tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
        return tuttiGetLastError(comm);
    const std::string file = dir + "/trace." + std::to_string(ctx.rank) + ".jsonl";
    raise(SIGUSR1);
    for (int i = 0; i < 200 && slurp(file).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::string lines = slurp(file);
    // TUTTI_TRACE_CALLS=8 keeps the last 8 calls, no more.
    const size_t n = static_cast<size_t>(std::count(lines.begin(), lines.end(), '\n'));
    if (n != 8) return "SIGUSR1 wrote " + std::to_string(n) + " lines, not the last 8 calls: " + lines;
    if (lines.find("\"seq\": 20,") == std::string::npos) return "the last call is not in the record: " + lines;
    if (lines.find("\"algorithm\": \"") == std::string::npos || lines.find("\"predicted_us\": ") == std::string::npos)
      return "the cost model's choice is not in the record: " + lines;
    // Ranks 0 and 1 go on to call #21, which rank 2 never makes: they time out.
    if (ctx.rank == 2) std::this_thread::sleep_for(std::chrono::seconds(4));
    else if (tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, nullptr) == tuttiSuccess)
      return "call #21 completed without rank 2";
    tuttiCommAbort(comm);
    return "";
  }, [dir](int) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TRACE_CALLS", "8"},
                                              {"TUTTI_TRACE_SIGNAL", "1"}, {"TUTTI_TIMEOUT", "2"},
                                              {"TUTTI_TRACE_FILE", dir + "/trace.%r.jsonl"}};
  });
  ASSERT_EQ(summarize(outcomes), "");
  auto [out, status] = runTraceTool(dir + "/trace.*.jsonl");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("rank 2 behind: last call #20 tuttiAllReduce(count 1000 float, sum) (ok), others reached #21"),
            std::string::npos) << out;
  EXPECT_EQ(out.find("differs"), std::string::npos) << out;
}

TEST(FlightRecorder, TheToolNamesTheFirstCallWhereRanksDiffer) {
  TempDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  const std::string dir = scratch.path;
  auto outcomes = runRanks(2, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    std::vector<float> buf(1024, 1.0f);
    for (int i = 0; i < 5; ++i) tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, nullptr);
    // Call #6: rank 1 broadcasts where rank 0 all-reduces.
    if (ctx.rank == 0) tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, nullptr);
    else tuttiBroadcast(buf.data(), buf.data(), buf.size(), tuttiFloat32, 1, comm, nullptr);
    tuttiCommAbort(comm);
    return "";
  }, [dir](int) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "3"},
                                              {"TUTTI_TRACE_FILE", dir + "/trace.%r.jsonl"}};
  });
  ASSERT_EQ(summarize(outcomes), "");
  auto [out, status] = runTraceTool(dir + "/trace.*.jsonl");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("call #6 differs:\n    rank 0 called tuttiAllReduce(count 1024 float, sum)\n"
                     "    rank 1 called tuttiBroadcast(count 1024 float, root 1)"),
            std::string::npos) << out;
}

TEST(FlightRecorder, TheToolRefusesWhatIsNotARecord) {
  TempDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  const std::string dir = scratch.path;
  std::ofstream(dir + "/bad.jsonl") << "{\"rank\": 0,\n";
  auto [out, status] = runTraceTool(dir + "/bad.jsonl");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("line 1 is not a flight recorder record"), std::string::npos) << out;
}

// The line of `out` holding `needle`, split at blanks ({} when none).
std::vector<std::string> wordsOfLineWith(const std::string& out, const std::string& needle) {
  const size_t at = out.find(needle);
  if (at == std::string::npos) return {};
  const size_t from = out.rfind('\n', at) + 1, to = out.find('\n', at);
  std::istringstream line(out.substr(from, to - from));
  std::vector<std::string> words;
  for (std::string w; line >> w;) words.push_back(w);
  return words;
}

TEST(FlightRecorder, DriftSetsEachKindOfCallsTimeBesideItsPrediction) {
  TempDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  const std::string dir = scratch.path;
  auto outcomes = runRanks(2, [](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    std::vector<float> small(2, 1.0f), big(1 << 18, 1.0f);
    for (int i = 0; i < 10; ++i) {
      if (tuttiAllReduce(small.data(), small.data(), small.size(), tuttiFloat32, tuttiSum, comm, nullptr) ||
          tuttiAllReduce(big.data(), big.data(), big.size(), tuttiFloat32, tuttiMax, comm, nullptr))
        return tuttiGetLastError(comm);
    }
    tuttiGroupStart();  // priced by nothing: left out
    tuttiSend(small.data(), small.size(), tuttiFloat32, 1 - ctx.rank, comm, nullptr);
    tuttiRecv(big.data(), small.size(), tuttiFloat32, 1 - ctx.rank, comm, nullptr);
    if (tuttiGroupEnd() != tuttiSuccess) return tuttiGetLastError(comm);
    tuttiCommDestroy(comm);  // writes the record
    return "";
  }, [dir](int) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_TIMEOUT", "30"},
                                              {"TUTTI_TRACE_FILE", dir + "/trace.%r.jsonl"}};
  });
  ASSERT_EQ(summarize(outcomes), "");
  auto [out, status] = runTraceTool("--drift " + dir + "/trace.*.jsonl");
  EXPECT_EQ(status, 0) << out;
  // call, algorithm, channels, calls, predicted, took, predicted over took (and maybe a mark)
  for (const std::string call : {"tuttiAllReduce(count 2 float, sum)", "tuttiAllReduce(count 262144 float, max)"}) {
    std::vector<std::string> w = wordsOfLineWith(out, call);
    ASSERT_GE(w.size(), 10u) << call << " has no row:\n" << out;
    EXPECT_EQ(w[6], "10") << out;  // the signature is 4 words: the calls' count follows algorithm and channels
    const double predicted = std::stod(w[7]), took = std::stod(w[8]), ratio = std::stod(w[9]);
    EXPECT_GT(predicted, 0) << out;
    EXPECT_GT(took, 0) << out;
    EXPECT_NEAR(ratio, predicted / took, 0.01 + 0.02 * ratio) << out;  // as printed, rounded
    EXPECT_EQ(w.size() > 10, ratio < 0.7 || ratio > 1.3) << "marked exactly when off by more than 30%:\n" << out;
  }
  EXPECT_EQ(out.find("tuttiSend"), std::string::npos) << out;
  // A rank's record read twice (a recorder written on a signal and at destroy) counts once.
  auto [twice, twiceStatus] = runTraceTool("--drift " + dir + "/trace.0.jsonl " + dir + "/trace.*.jsonl");
  EXPECT_EQ(twiceStatus, 0) << twice;
  EXPECT_EQ(twice, out);
  EXPECT_NE(out.find(" of 2 kind(s) of call within 30% of the prediction"), std::string::npos) << out;
  // Records of sends alone hold nothing to compare.
  std::ofstream(dir + "/sends.jsonl") << "{\"rank\": 0, \"nranks\": 2, \"comm\": \"1\", \"name\": \"\", \"seq\": 1, "
                                         "\"call\": \"tuttiSend\", \"result\": \"ok\"}\n";
  auto [none, noneStatus] = runTraceTool("--drift " + dir + "/sends.jsonl");
  EXPECT_EQ(noneStatus, 2) << none;
  EXPECT_NE(none.find("no priced call"), std::string::npos) << none;
}

}  // namespace
}  // namespace tutti_test
