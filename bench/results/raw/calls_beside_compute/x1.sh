#!/usr/bin/env bash
# x1.sh N LOG [ENV..] -- CMD: N ranks on this host
# Diagnostic script of stop 64, kept as it ran (scratch paths under /tmp; libraries are CPU-only
# builds copied to /tmp/libs/NAME). See ../../calls_beside_compute.md.
n=$1 log=$2; shift 2
envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
port=$((34000 + RANDOM % 2000)); pids=()
for ((r=n-1;r>=0;r--)); do
  env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TUTTI_CACHE_DIR=/tmp/s64/cache1 "${envs[@]}" "$@" > $log.$r 2>&1 &
  pids+=($!)
done
rc=0; for p in "${pids[@]}"; do wait $p || rc=1; done; exit $rc
