#!/usr/bin/env bash
# Builds the across-nodes peers (bench/peers/allreduce_ranks.cpp) into OUT:
# allreduce_ranks_mpi (Open MPI), allreduce_ranks_gloo (Gloo) and, against
# TUTTI_BUILD's libtutti when it has one, allreduce_ranks_tutti (tutti timed
# exactly as the peers are), installing Open MPI's and Gloo's headers first
# when missing (no build step or test of tutti needs them). The timing
# method is the peers' (../shared/peers).
#   bench/peers/build_node_peers.sh OUT [PEERS_DIR]   (TUTTI_BUILD: default build/)
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
tutti_build=${TUTTI_BUILD:-$here/../../build}
if [ -e "$tutti_build/libtutti.so" ]; then
  g++ "${flags[@]}" -DWITH_TUTTI -I "$here/../../include" "$here/allreduce_ranks.cpp" -o "$out/allreduce_ranks_tutti" \
    -L "$tutti_build" -ltutti -Wl,-rpath,"$(cd "$tutti_build" && pwd)"
fi
