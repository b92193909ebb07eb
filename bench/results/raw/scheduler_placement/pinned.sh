#!/usr/bin/env bash
# 2 namespace nodes x 2 ranks on this 2-core machine, three ways, alternated:
# none (the scheduler places the ranks), split (taskset: each node's two
# ranks on different cores), same (each node's two ranks on one core, the
# other node's on the other). Each launch has a fresh TUTTI_CACHE_DIR.
# Needs the nodes first: tests/multinode/netns.sh up 2 tutti-x
# Prints per launch: size:time_us algorithm (predicted_us), out of place.
cd "$(dirname "$0")/../../../.."
source bench/node_ranks.sh
out=${OUT:-/tmp/scheduler_placement_pinned}
mkdir -p "$out"
for round in 1 2 3; do
  for p in none split same; do
    node_ranks_port=$((node_ranks_port + 1))
    pids=()
    for r in 3 2 1 0; do
      pre=()
      [ $p = split ] && pre=(taskset -c $((r % 2)))
      [ $p = same ] && pre=(taskset -c $((r / 2)))
      extra=()
      [ $r = 0 ] && extra=(--csv "$out/$p.$round.csv")
      node_rank tutti-x $r 4 2 TUTTI_CACHE_DIR="$out/cache.$p.$round" "${pre[@]}" \
        build/bench/tutti-perf -b 8 -e 1M -f 8 -n 40 -w 5 "${extra[@]}" >"$out/$p.$r.log" 2>&1 &
      pids+=($!)
    done
    wait "${pids[@]}"
    echo "round $round $p: $(awk -F, '$8=="out-of-place"{printf "%s:%.1f%s(%.0f) ",$3,$9,$13,$15}' "$out/$p.$round.csv")"
  done
done
