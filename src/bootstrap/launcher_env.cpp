#include "src/bootstrap/launcher_env.h"

#include <cstdlib>

#include "src/common/config.h"

namespace tutti {

namespace {

struct Family {
  const char* name;
  const char* rank;
  const char* size;
  const char* localRank;
};
constexpr Family kFamilies[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

Status parseField(const EnvLookup& get, const char* var, int* out) {
  const char* v = get(var);
  int64_t n = 0;
  if (!v || !parseInt64(v, &n) || n < 0 || n > (1 << 30))
    return InvalidArgument(std::string(var) + "=\"" + (v ? v : "") + "\" is not a valid number");
  *out = static_cast<int>(n);
  return Status::Ok();
}

}  // namespace

Result<LauncherEnv> readLauncherEnv(const EnvLookup& lookupIn) {
  EnvLookup get = lookupIn ? lookupIn : [](const char* n) -> const char* { return std::getenv(n); };
  LauncherEnv env;
  for (const Family& f : kFamilies) {
    if (!get(f.rank) || !get(f.size)) continue;
    env.launcher = f.name;
    TUTTI_RETURN_IF_ERROR(parseField(get, f.rank, &env.rank));
    TUTTI_RETURN_IF_ERROR(parseField(get, f.size, &env.size));
    if (get(f.localRank)) TUTTI_RETURN_IF_ERROR(parseField(get, f.localRank, &env.localRank));
    break;
  }
  if (env.launcher.empty())
    return InvalidArgument(
        "no rank and size in the environment: set RANK and WORLD_SIZE, or run under mpirun "
        "(OMPI_COMM_WORLD_*), a PMI launcher (PMI_RANK/PMI_SIZE) or srun (SLURM_PROCID/SLURM_NTASKS)");
  if (env.size < 1 || env.rank >= env.size)
    return InvalidArgument(env.launcher + " variables give rank " + std::to_string(env.rank) +
                           " of " + std::to_string(env.size));
  const char* commId = get("TUTTI_COMM_ID");
  if (!commId) commId = get("NCCL_COMM_ID");
  if (commId && *commId) {
    env.rendezvous = commId;
  } else if (get("MASTER_ADDR") && get("MASTER_PORT")) {
    std::string host = get("MASTER_ADDR");
    if (host.find(':') != std::string::npos && host[0] != '[') host = "[" + host + "]";
    env.rendezvous = host + ":" + get("MASTER_PORT");
  } else {
    return InvalidArgument("no rendezvous address: set TUTTI_COMM_ID=host:port or MASTER_ADDR and "
                           "MASTER_PORT (rank 0 listens there)");
  }
  return env;
}

}  // namespace tutti
