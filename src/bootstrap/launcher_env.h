// Rank, size and rendezvous address from the variables launchers set:
// torchrun (RANK, WORLD_SIZE, LOCAL_RANK), Open MPI (OMPI_COMM_WORLD_*),
// MPICH/PMI (PMI_RANK, PMI_SIZE), Slurm (SLURM_PROCID, SLURM_NTASKS); the
// address from TUTTI_COMM_ID=host:port or MASTER_ADDR and MASTER_PORT.
#pragma once

#include <functional>
#include <string>

#include "src/common/status.h"

namespace tutti {

struct LauncherEnv {
  int rank = -1;
  int size = -1;
  int localRank = -1;
  std::string launcher;     // which family of variables was found
  std::string rendezvous;   // host:port
};

using EnvLookup = std::function<const char*(const char*)>;

// lookup defaults to getenv; tests pass their own.
Result<LauncherEnv> readLauncherEnv(const EnvLookup& lookup = nullptr);

}  // namespace tutti
