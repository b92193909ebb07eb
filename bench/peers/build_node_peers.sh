#!/usr/bin/env bash
# Builds the across-nodes peers (bench/peers/allreduce_ranks.cpp) into OUT:
# allreduce_ranks_mpi (Open MPI) and allreduce_ranks_gloo (Gloo), installing
# Open MPI's and Gloo's headers first when missing (no build step or test of
# tutti needs them). The timing method is the peers' (../shared/peers).
#   bench/peers/build_node_peers.sh OUT [PEERS_DIR]
set -euo pipefail
out=${1:?usage: build_node_peers.sh OUT [PEERS_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
peers=${2:-$here/../../../shared/peers}
missing=()
for p in g++ openmpi-bin libopenmpi-dev libgloo-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get -o DPkg::Lock::Timeout=900 update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -o DPkg::Lock::Timeout=900 -y -q --no-install-recommends \
    "${missing[@]}" >&2
fi
mkdir -p "$out"
flags=(-std=c++20 -O3 -march=native -I "$peers")
mpicxx.openmpi "${flags[@]}" "$here/allreduce_ranks.cpp" -o "$out/allreduce_ranks_mpi"
g++ "${flags[@]}" -DWITH_GLOO -pthread "$here/allreduce_ranks.cpp" -o "$out/allreduce_ranks_gloo" -lgloo
