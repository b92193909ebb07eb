#!/usr/bin/env bash
# ab3.sh NODES PER ROUNDS ARGS...: old and new tutti-perf alternated, own cache dirs
# Diagnostic script of stop 64, kept as it ran (scratch paths under /tmp). See ../../halving_doubling_ring.md.
nodes=$1 per=$2 rounds=$3; shift 3
for ((i=1;i<=rounds;i++)); do
  for v in old new; do
    if [ $v = old ]; then P=/tmp/s64/wt_old/B/bench/tutti-perf; else P=/work/main/build/bench/tutti-perf; fi
    ./xp.sh $nodes $per L - TUTTI_CACHE_DIR=/tmp/s64/cache-$v-${nodes}x$per-$TAG -- $P "$@"
    echo "$i $v $(grep -E '^\s+[0-9]+ ' L.0 | awk '{printf "%s:%s/%s(%s%s) ", $1, $6, $8, $(NF-3), $(NF-2)}')"
  done
done
