// The flight recorder and tutti-trace: every rank's last calls written as
// JSON lines (on SIGUSR1, on the first error, at destroy), and the merge of
// all ranks' files naming the first call at which they part and the rank
// that is behind.
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

#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// tutti-trace's output and exit status.
std::pair<std::string, int> runTraceTool(const std::string& files) {
  std::string out;
  FILE* p = popen((std::string(TUTTI_TRACE_TOOL) + " " + files + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof(buf), p)) out += buf;
  int status = p ? pclose(p) : -1;
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

std::string tempDir() {
  char dir[] = "/tmp/tutti-trace-XXXXXX";
  return mkdtemp(dir) ? dir : "/tmp";
}

TEST(FlightRecorder, SignalWritesTheLastCallsAndTheToolNamesTheRankBehind) {
  const std::string dir = tempDir();
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
  std::system(("rm -rf " + dir).c_str());
}

TEST(FlightRecorder, TheToolNamesTheFirstCallWhereRanksDiffer) {
  const std::string dir = tempDir();
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
  std::system(("rm -rf " + dir).c_str());
}

TEST(FlightRecorder, TheToolRefusesWhatIsNotARecord) {
  const std::string dir = tempDir();
  std::ofstream(dir + "/bad.jsonl") << "{\"rank\": 0,\n";
  auto [out, status] = runTraceTool(dir + "/bad.jsonl");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("line 1 is not a flight recorder record"), std::string::npos) << out;
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace tutti_test
