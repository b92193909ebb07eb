#!/usr/bin/env bash
# ab.sh NODES PER ROUNDS OUTDIR: the base build (worktree wt) and the tried one
# (worktree new) alternated, each launch with an empty cache (a first launch),
# tutti-perf 8 B to 32 MiB, the INIT log on. Nodes: tests/multinode/netns.sh up 4 tutti-y.
# Launcher: ../halving_doubling_ring/xp.sh (a later ENV argument overrides its cache).
nodes=$1 per=$2 rounds=$3 out=$4; mkdir -p "$out"
xp=$(dirname "$0")/../halving_doubling_ring/xp.sh
for ((i = 1; i <= rounds; i++)); do for lib in ${LIBS:-wt new}; do
  rm -rf /tmp/s67/cache_ab
  bash "$xp" "$nodes" "$per" "$out/${lib}_${nodes}x${per}_$i" - TUTTI_CACHE_DIR=/tmp/s67/cache_ab TUTTI_DEBUG=INFO \
    TUTTI_DEBUG_SUBSYS=INIT -- /tmp/s67/${LIBS_DIR:-}$lib/B/bench/tutti-perf -b 8 -e 64M -f 4 -n 20 -w 5
done; done
