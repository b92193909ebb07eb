#!/usr/bin/env bash
# Builds bench/peers/mpi_small.cpp into OUT, installing Open MPI's headers
# first when they are missing: install-deps.sh brings mpirun and the mpicxx
# wrapper (openmpi-bin) but not mpi.h, which no build step or test needs.
#   bench/peers/build_mpi_small.sh OUT
set -euo pipefail
out=${1:?usage: build_mpi_small.sh OUT}
if ! dpkg-query -W -f='${Status}' libopenmpi-dev 2>/dev/null | grep -q 'ok installed'; then
  apt-get -o DPkg::Lock::Timeout=900 update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openmpi-bin libopenmpi-dev >&2
fi
mpicxx -O3 -march=native -o "$out" "$(dirname "$0")/mpi_small.cpp"
