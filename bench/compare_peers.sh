#!/usr/bin/env bash
# Float32 sum all-reduce, 2 and 4 ranks, 8 B to 64 MiB: tutti (shared memory,
# and TCP loopback with TUTTI_SHM_DISABLE=1) beside Open MPI (vader, vader with
# huge pages, TCP) and Gloo (TCP), measured in the same run on this machine.
# Writes bench/results/allreduce_vs_peers.md (and the raw CSVs beside it).
#   PEERS=../shared/peers  where the peers' harness lives (run_all.sh)
#   OUT=bench/results      where the report goes
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=${PEERS:-../shared/peers}
OUT=${OUT:-bench/results}
raw=$(mktemp -d)
mkdir -p "$OUT"
scripts/build.sh >/dev/null

# Peers first (their script installs Open MPI and Gloo if missing).
WITH_MPICH=0 PASSES=1 RESULTS="$raw/peers" \
  ONLY="openmpi_2_vader openmpi_2_vader_thp openmpi_2_tcp gloo_2_tcp openmpi_4_vader openmpi_4_tcp gloo_4_tcp" \
  "$PEERS/run_all.sh" >"$raw/peers.log" 2>&1

perf=build/bench/tutti-perf
export TUTTI_SOCKET_IFNAME=lo
for n in 2 4; do
  "$perf" -np "$n" -b 8 -e 64M -f 2 -n 20 -w 20 --csv "$raw/tutti_${n}_shm.csv" >"$raw/tutti_${n}_shm.txt"
  TUTTI_SHM_DISABLE=1 "$perf" -np "$n" -b 8 -e 64M -f 2 -n 20 -w 20 --csv "$raw/tutti_${n}_tcp.csv" \
    >"$raw/tutti_${n}_tcp.txt"
done
python3 bench/compare_peers.py "$raw" >"$OUT/allreduce_vs_peers.md"
mkdir -p "$OUT/raw"
cp "$raw"/tutti_*.txt "$OUT/raw/"
cp "$raw/peers/pass1/"*.csv "$OUT/raw/" 2>/dev/null || true
cat "$OUT/allreduce_vs_peers.md"
rm -rf "$raw"
