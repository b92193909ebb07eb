// TUTTI_KEEP_CALL_TIMES: rank 0 of a communicator of several nodes keeps
// its large all-reduces' times in TUTTI_CACHE_DIR at destroy, and the next
// communicator of the same shape adds them to its calibration (its init
// log says so); set to 0, neither. Two nodes faked with TUTTI_HOSTID on
// loopback.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/harness/files.h"
#include "tests/harness/ranks.h"

namespace tutti_test {
namespace {

constexpr size_t kCount = 2 << 20;  // 8 MiB of floats: past every algorithm's calibrated sizes

// The one kept-times file in `dir` ("" when there is none).
std::string keptFile(const std::string& dir) {
  std::string found;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("tutti-calls-", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".json")
        found = dir + "/" + name;
    }
    closedir(d);
  }
  return found;
}

// The calls counted in a kept-times file, whichever algorithms ran them.
double callsIn(const std::string& text) {
  static const std::regex calls("\"calls\": ([0-9.]+)");
  double sum = 0;
  for (std::sregex_iterator m(text.begin(), text.end(), calls), end; m != end; ++m) sum += std::stod((*m)[1]);
  return sum;
}

// One launch of 2 ranks on 2 nodes making `calls` all-reduces of kCount
// floats, each checked; rank 0 returns "" or what its log lacks.
std::string launch(const std::string& dir, int index, int calls, bool keep, bool wantKeptAtInit) {
  const std::string logs = dir + "/launch" + std::to_string(index);
  auto outcomes = runRanks(2, [&](const RankContext& ctx) -> std::string {
    tuttiComm_t comm = nullptr;
    std::string err = initComm(ctx, &comm);
    if (!err.empty()) return err;
    std::vector<float> in(kCount), out(kCount);
    for (int c = 0; c < calls; ++c) {
      for (size_t i = 0; i < kCount; ++i) in[i] = float(ctx.rank + 1 + int((i + c) % 7));
      if (tuttiAllReduce(in.data(), out.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr) != tuttiSuccess)
        return std::string("all-reduce: ") + tuttiGetLastError(comm);
      for (size_t i = 0; i < kCount; ++i)
        if (out[i] != float(3 + 2 * int((i + c) % 7))) return "call " + std::to_string(c) + ": wrong element " + std::to_string(i);
    }
    tuttiCommDestroy(comm);
    if (ctx.rank != 0) return "";
    const std::string log = slurp(logs + "." + std::to_string(getpid()));
    const std::regex keptPoint(" " + std::to_string(kCount * 4) + " B [0-9.]+ us \\([0-9.]+x, with earlier runs' calls\\)");
    const bool keptAtInit = std::regex_search(log, keptPoint);
    const bool keptAtDestroy = log.find("kept in " + dir + "/tutti-calls-") != std::string::npos;
    if (log.find("links measured") == std::string::npos) return "no calibration line in rank 0's log:\n" + log;
    if (keptAtInit != wantKeptAtInit || keptAtDestroy != keep)
      return std::string("rank 0's log ") + (keptAtInit ? "adds" : "does not add") + " kept times at init and " +
             (keptAtDestroy ? "keeps" : "does not keep") + " them at destroy:\n" + log;
    return "";
  }, [&](int rank) {
    return std::map<std::string, std::string>{{"TUTTI_SOCKET_IFNAME", "lo"}, {"TUTTI_CACHE_DIR", dir},
                                              {"TUTTI_KEEP_CALL_TIMES", keep ? "1" : "0"},
                                              {"TUTTI_HOSTID", "node" + std::to_string(rank)},
                                              {"TUTTI_DEBUG", "INFO"}, {"TUTTI_DEBUG_SUBSYS", "INIT"},
                                              {"TUTTI_DEBUG_FILE", logs + ".%p"}};
  }, 120);
  return summarize(outcomes);
}

TEST(KeptCallTimes, TheNextCommunicatorOfTheShapePricesByThem) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  ASSERT_EQ(launch(dir.path, 1, 3, true, false), "");
  const std::string file = keptFile(dir.path);
  ASSERT_FALSE(file.empty()) << "no kept times in " << dir.path;
  const std::string first = slurp(file);
  EXPECT_NE(first.find("\"bytes\": " + std::to_string(kCount * 4) + ".0"), std::string::npos) << first;
  EXPECT_EQ(callsIn(first), 3) << first;
  // The next launch may choose another algorithm by what was kept: its call
  // joins the file either way.
  ASSERT_EQ(launch(dir.path, 2, 1, true, true), "");
  EXPECT_EQ(callsIn(slurp(file)), 4) << slurp(file);
  // Off: nothing read, nothing written.
  const std::string before = slurp(file);
  ASSERT_EQ(launch(dir.path, 3, 1, false, false), "");
  EXPECT_EQ(slurp(file), before);
}

}  // namespace
}  // namespace tutti_test
