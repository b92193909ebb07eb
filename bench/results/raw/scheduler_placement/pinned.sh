#!/usr/bin/env bash
# Namespace nodes on this 2-core machine, tutti-perf placed several ways in
# turn, each launch with a fresh TUTTI_CACHE_DIR and TUTTI_NODE_CORES=0 (so
# that taskset's placement stays; before that setting existed nothing was
# bound): by the scheduler ("none"), ranks 0-1 on core 0 and 2-3 on core 1
# ("same" on 2 x 2: each node's two ranks on one core; "half" on 4 x 1: two
# nodes a core), or ranks 0 and 2 on core 0 ("split" on 2 x 2: each node's
# ranks on both cores; "alt" on 4 x 1).
#   LAYOUT="2 2" (default) or LAYOUT="4 1"; PLACES and PERFARGS change the rest.
# Needs the nodes first: tests/multinode/netns.sh up NODES tutti-x [4gbit]
# Prints per launch: size:time_us algorithm (predicted_us), out of place.
cd "$(dirname "$0")/../../../.."
source bench/node_ranks.sh
layout=(${LAYOUT:-2 2})
default_places="none split same"
[ "${layout[0]}" = 4 ] && default_places="none half alt"
out=${OUT:-/tmp/scheduler_placement_pinned}
mkdir -p "$out"
for round in 1 2 3; do
  for p in ${PLACES:-$default_places}; do
    node_ranks_port=$((node_ranks_port + 1))
    pids=()
    for r in 3 2 1 0; do
      pre=()
      case $p in
        same | half) pre=(taskset -c $((r / 2))) ;;
        split | alt) pre=(taskset -c $((r % 2))) ;;
      esac
      extra=()
      [ $r = 0 ] && extra=(--csv "$out/$p.$round.csv")
      node_rank tutti-x $r 4 "${layout[1]}" TUTTI_NODE_CORES=0 TUTTI_CACHE_DIR="$out/cache.$p.$round" "${pre[@]}" \
        build/bench/tutti-perf ${PERFARGS:--b 8 -e 1M -f 8 -n 40 -w 5} "${extra[@]}" >"$out/$p.$r.log" 2>&1 &
      pids+=($!)
    done
    wait "${pids[@]}"
    echo "round $round $p: $(awk -F, '$8=="out-of-place"{printf "%s:%.1f%s(%.0f) ",$3,$9,$13,$15}' "$out/$p.$round.csv")"
  done
done
