#!/usr/bin/env bash
# The main job: install what is missing, build, and run a 4-rank float32 sum
# all-reduce benchmark (shared memory, 8 B to 64 MiB, every result checked).
# Extra arguments go to tutti-perf (e.g. -np 2, or -C allgather).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export TUTTI_SOCKET_IFNAME=${TUTTI_SOCKET_IFNAME:-lo}
exec "${BUILD_DIR:-build}/bench/tutti-perf" -np 4 -b 8 -e 64M -f 2 -n 20 -w 5 "$@"
