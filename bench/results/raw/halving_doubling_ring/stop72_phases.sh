#!/usr/bin/env bash
# Where halving-doubling's time goes on 4 x 1 namespace nodes with 4 Gbit/s
# links: a library built with stop72_phase_trace.diff prints, on every rank,
# when each phase of a call of 1 MiB or more ends (PHASE rank phase ms
# iterations chunk-elements). Forced halving-doubling and forced rings of
# 16 MiB, alternated, each launch with a fresh cache; then the phases of
# the last halving-doubling launch, per call and rank.
# Needs the nodes first: tests/multinode/netns.sh up 4 tutti-x 4gbit
set -euo pipefail
cd "$(dirname "$0")/../../../.."
here=bench/results/raw/halving_doubling_ring
lib=${LIB:-/tmp/lib_phase}
if [ ! -e "$lib/libtutti.so.0" ]; then
  git apply "$here/stop72_phase_trace.diff"
  ninja -C build libtutti.so >/dev/null
  mkdir -p "$lib" && cp -L build/libtutti.so.0 "$lib/"
  git checkout src/exec/executor.cpp
  ninja -C build libtutti.so >/dev/null
fi
source bench/node_ranks.sh
out=${OUT:-/tmp/stop72_phases}
mkdir -p "$out"
for a in hd ring hd ring; do
  rm -rf "$out/cache"
  node_ranks tutti-x 4 1 "$out/$a.csv" TUTTI_CACHE_DIR="$out/cache" TUTTI_ALGO=$a PHASE_TRACE=1 \
    LD_LIBRARY_PATH="$lib" build/bench/tutti-perf -b 16M -e 16M -n 6 -w 2
  echo "$a: $(awk -F, '$8=="out-of-place"{printf "16 MiB %.1f ms (predicted %.1f)",$9/1000,$15/1000}' "$out/$a.csv")"
done
# Phase durations of the last hd launch: from the previous phase's end on the same rank.
cat "$out"/hd.csv.*.log | grep '^PHASE' | python3 -c '
import sys, collections
per = collections.defaultdict(list)
for line in sys.stdin:
    _, rank, phase, t, iters, chunk = line.split()
    per[int(rank)].append((int(phase), float(t), int(iters) * int(chunk) * 4 / 2**20))
for rank in sorted(per):
    rows = per[rank][-12:]
    print("rank", rank, " ".join("p%d %.1f ms (%.0f MiB)" % (p, t - rows[i - 1][1], mib) for i, (p, t, mib) in enumerate(rows) if i))
'
