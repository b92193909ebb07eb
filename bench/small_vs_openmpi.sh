#!/usr/bin/env bash
# Small messages beside Open MPI (shared memory, vader), same machine, same
# run: float32 sum all-reduce, broadcast and barrier, 8 B to 64 KiB, 2 and
# 4 ranks, PASSES passes with the two libraries interleaved. Both sides are
# timed alike (bench/peers/mpi_small.cpp does what tutti-perf does).
# Writes bench/results/small_vs_openmpi.md and the raw outputs under raw/.
# ITERS calls a size: 4 ranks on 2 cores take 3-6 us an 8-byte call, so
# 2,000 calls were a 10 ms window that one scheduler hiccup decided.
#   ITERS=20000 PASSES=5 OUT=bench/results
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${ITERS:-20000}
PASSES=${PASSES:-5}
OUT=${OUT:-bench/results}
raw=$(mktemp -d)
bench/peers/build_mpi_small.sh "$raw/mpi_small"
scripts/build.sh >/dev/null
perf=build/bench/tutti-perf
ompi=(mpirun --allow-run-as-root --oversubscribe --mca pml ob1 --mca oob_tcp_if_include lo --mca btl self,vader)
warm=$((ITERS / 10))
for pass in $(seq 1 "$PASSES"); do
  for np in 2 4; do
    "${ompi[@]}" -np "$np" "$raw/mpi_small" "$ITERS" >"$raw/ompi_${np}_$pass.txt"
    for coll in allreduce broadcast barrier; do
      # The table's times have two decimals, the JSON's three (a call of 0.1 us).
      "$perf" -np "$np" -C "$coll" -b 8 -e 64K -f 2 -n "$ITERS" -w "$warm" \
        --json "$raw/tutti_${np}_${coll}_$pass.json" >"$raw/tutti_${np}_${coll}_$pass.txt"
    done
  done
done
python3 bench/small_vs_openmpi.py "$raw" "$ITERS" >"$OUT/small_vs_openmpi.md"
mkdir -p "$OUT/raw/small_vs_openmpi"
cp "$raw"/*.txt "$raw"/*.json "$OUT/raw/small_vs_openmpi/"
cat "$OUT/small_vs_openmpi.md"
