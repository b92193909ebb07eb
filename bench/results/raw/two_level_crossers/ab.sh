#!/bin/bash
# ab.sh NODES PER ROUNDS: base vs new tutti-perf, alternating, own caches (stop 66).
# Builds: /tmp/basewt/B (a256abb) and /tmp/tl/B (the new library), CPU-only; launcher
# /tmp/s66/xp.sh: ../halving_doubling_ring/xp.sh with its cache under /tmp/s66.
nodes=$1 per=$2 rounds=$3; shift 3
for r in $(seq $rounds); do for lib in base new; do
  bin=/tmp/basewt/B/bench/tutti-perf; [ $lib = new ] && bin=/tmp/tl/B/bench/tutti-perf
  sed -e "s#/tmp/s66/cache#/tmp/s66/ab/cache_${nodes}x${per}_$lib#" /tmp/s66/xp.sh > /tmp/s66/ab/xp_$lib.sh; chmod +x /tmp/s66/ab/xp_$lib.sh
  mkdir -p /tmp/s66/ab/cache_${nodes}x${per}_$lib
  TUTTI_ALGO=$ALGO LD_LIBRARY_PATH=$(dirname $(dirname $bin)) /tmp/s66/ab/xp_$lib.sh $nodes $per /tmp/s66/ab/log - -- $bin "$@"
  echo "$lib r$r: $(grep -E "^ +[0-9]" /tmp/s66/ab/log.0 | awk '{print $1, $6, $14}' | tr '\n' ';')"
done; done
