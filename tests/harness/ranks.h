// Runs a test body in N real processes, one per rank, as the ranks of a
// job would be. The first rank makes the unique id and hands it to the others
// through a pipe (the test process itself starts no tutti threads). Each
// rank reports failures as text; a rank that crashes, hangs past the limit
// or exits non-zero is a failure too.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti_test {

struct RankContext {
  int rank;
  int nranks;
  tuttiUniqueId id;
};

// Returns "" on success, or what went wrong.
using RankBody = std::function<std::string(const RankContext&)>;
// Environment variables to set in a rank's process before the body runs.
using RankEnv = std::function<std::map<std::string, std::string>(int rank)>;

struct RankOutcome {
  int rank;
  std::string failure;  // empty: passed
};

std::vector<RankOutcome> runRanks(int nranks, const RankBody& body, const RankEnv& env = nullptr,
                                  int limitSeconds = 300);

// A convenience: "" when every rank passed, else each failing rank's story.
std::string summarize(const std::vector<RankOutcome>& outcomes);

// Runs body as N ranks on threads of this process (a communicator each, as
// NCCL's one-process multi-GPU programs make them): one unique id, made
// here, for all. "" when every rank passed, else each failing rank's story.
using ThreadRankBody = std::function<std::string(int rank, const tuttiUniqueId& id)>;
std::string runThreadRanks(int nranks, const ThreadRankBody& body);

// Inits a communicator in a rank body; returns the error text or "".
std::string initComm(const RankContext& ctx, tuttiComm_t* comm);

}  // namespace tutti_test
