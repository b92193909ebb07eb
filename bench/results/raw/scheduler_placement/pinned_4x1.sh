#!/usr/bin/env bash
# 4 namespace nodes x 1 rank on this 2-core machine, placed three ways in
# turn: by the scheduler (none), nodes 0-1 on core 0 and 2-3 on core 1
# (half: what TUTTI_NODE_CORES now does there), nodes 0 and 2 on core 0
# (alt); each launch with a fresh cache, run with TUTTI_NODE_CORES=0 so
# that taskset's placement stays. PLACES and PERFARGS change them.
# Needs the nodes first: tests/multinode/netns.sh up 4 tutti-x [4gbit]
cd "$(dirname "$0")/../../../.."
source bench/node_ranks.sh
out=${OUT:-/tmp/scheduler_placement_4x1}
mkdir -p "$out"
for round in 1 2 3; do
  for p in ${PLACES:-none half alt}; do
    node_ranks_port=$((node_ranks_port + 1))
    pids=()
    for r in 3 2 1 0; do
      pre=()
      [ $p = half ] && pre=(taskset -c $((r / 2)))
      [ $p = alt ] && pre=(taskset -c $((r % 2)))
      extra=()
      [ $r = 0 ] && extra=(--csv "$out/$p.$round.csv")
      node_rank tutti-x $r 4 1 TUTTI_NODE_CORES=0 TUTTI_CACHE_DIR="$out/cache.$p.$round" "${pre[@]}" \
        build/bench/tutti-perf ${PERFARGS:--b 8 -e 1M -f 8 -n 40 -w 5} "${extra[@]}" >"$out/$p.$r.log" 2>&1 &
      pids+=($!)
    done
    wait "${pids[@]}"
    echo "round $round $p: $(awk -F, '$8=="out-of-place"{printf "%s:%.1f%s(%.0f) ",$3,$9,$13,$15}' "$out/$p.$round.csv")"
  done
done
