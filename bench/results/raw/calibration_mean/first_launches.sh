#!/usr/bin/env bash
# run.sh ROUNDS STATS...: first launches (empty cache) of the scratch build under each XP_STAT, 2x2 and 4x1
cd /work/main
XP=bench/results/raw/halving_doubling_ring/xp.sh
rounds=$1; shift; stats=("$@")
for ((i=1;i<=rounds;i++)); do for L in 2x2 4x1; do for S in "${stats[@]}"; do
  rm -rf /tmp/s68/cache/*
  bash $XP ${L%x*} ${L#*x} /tmp/s68/stat/${S}_${L}_$i - TUTTI_CACHE_DIR=/tmp/s68/cache XP_STAT=$S -- /tmp/s68/wt/B/bench/tutti-perf -b 8 -e 64M -f 4 -n 20 -w 5 >/dev/null 2>&1
done; done; done
