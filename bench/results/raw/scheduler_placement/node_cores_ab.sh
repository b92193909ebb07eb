#!/usr/bin/env bash
# TUTTI_NODE_CORES=0 (the scheduler places the ranks, as before) and 1 (each
# network node sharing the kernel's cores takes its share: the default)
# alternated on 2 namespace nodes x 2 ranks, a fresh TUTTI_CACHE_DIR a
# launch; prints size:time_us algorithm (predicted_us), out of place, and
# the shares the ranks logged. LAYOUT="NODES PER" and PERFARGS change them.
# Needs the nodes first: tests/multinode/netns.sh up 2 tutti-x
cd "$(dirname "$0")/../../../.."
source bench/node_ranks.sh
out=${OUT:-/tmp/node_cores_ab}
mkdir -p "$out"
layout=(${LAYOUT:-2 2})
for round in $(seq 1 "${ROUNDS:-3}"); do
  for v in 0 1; do
    rm -rf "$out/cache$v.$round"
    node_ranks tutti-x "${layout[@]}" "$out/v$v.$round.csv" TUTTI_NODE_CORES=$v TUTTI_CACHE_DIR="$out/cache$v.$round" \
      TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=INIT build/bench/tutti-perf ${PERFARGS:--b 8 -e 4M -f 8 -n 40 -w 5}
    echo "round $round TUTTI_NODE_CORES=$v: $(awk -F, '$8=="out-of-place"{printf "%s:%.1f%s(%.0f) ",$3,$9,$13,$15}' "$out/v$v.$round.csv")"
  done
done
grep -h "takes core" "$out"/v1.1.csv.*.log
