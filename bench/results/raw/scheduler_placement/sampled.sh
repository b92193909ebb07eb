#!/usr/bin/env bash
# 2 namespace nodes x 2 ranks, placed by the scheduler: while tutti-perf
# runs only small calls, sample.py reads every 5 ms which core each rank is
# on. Prints per launch the share of samples with each node's two ranks on
# one core ("same"), on two ("split"), or one node each way ("mixed"), and
# size:time_us algorithm (predicted_us), out of place.
# Needs the nodes first: tests/multinode/netns.sh up 2 tutti-x
cd "$(dirname "$0")/../../../.."
source bench/node_ranks.sh
here=bench/results/raw/scheduler_placement
out=${OUT:-/tmp/scheduler_placement_sampled}
mkdir -p "$out"
for round in $(seq 1 "${ROUNDS:-8}"); do
  python3 "$here/sample.py" >"$out/cpus.$round" &
  s=$!
  node_ranks tutti-x 2 2 "$out/none.$round.csv" TUTTI_CACHE_DIR="$out/cache.$round" \
    build/bench/tutti-perf -b 8 -e 512 -f 8 -n 4000 -w 50
  wait $s
  echo "round $round [$(cat "$out/cpus.$round")]: $(awk -F, '$8=="out-of-place"{printf "%s:%.1f%s(%.0f) ",$3,$9,$13,$15}' "$out/none.$round.csv")"
done
