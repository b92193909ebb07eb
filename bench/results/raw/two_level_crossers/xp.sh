#!/usr/bin/env bash
# xp.sh NODES PER LOG PINS [ENV..] -- CMD...   PINS: "-" none or one cpu digit per rank
# Diagnostic launcher of stop 65 (stop 64's, cache under /tmp/s65) on nodes from tests/multinode/netns.sh up N tutti-y [4gbit]. See ../../kept_at_calibrated_sizes.md.
nodes=$1 per=$2 log=$3 pins=$4; shift 4
envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
n=$((nodes*per)); port=$((32000 + RANDOM % 2000)); pids=()
for ((r=n-1;r>=0;r--)); do
  pre=(); [ "$pins" != "-" ] && pre=(taskset -c ${pins:$r:1})
  ip netns exec tutti-y-n$((r/per)) env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$((r%per)) LOCAL_WORLD_SIZE=$per \
    MASTER_ADDR=10.77.0.1 MASTER_PORT=$port TUTTI_SOCKET_IFNAME=data0 TUTTI_CACHE_DIR=/tmp/s66/cache "${envs[@]}" "${pre[@]}" "$@" > $log.$r 2>&1 &
  pids+=($!)
done
rc=0; for p in "${pids[@]}"; do wait $p || rc=1; done; exit $rc
