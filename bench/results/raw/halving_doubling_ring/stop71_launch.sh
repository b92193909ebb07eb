#!/bin/bash
# stop71_launch.sh NODES PER OUT [VAR=VALUE...] CMD...: one launch across the
# namespace nodes tutti-x-n* (tests/multinode/netns.sh up 4 tutti-x [4gbit]),
# ranks in blocks (bench/node_ranks.sh), every launch with an empty
# TUTTI_CACHE_DIR; rank 0's output in OUT.
cd "$(dirname "$0")/../../../.." && source bench/node_ranks.sh
nodes=$1 per=$2 out=$3; shift 3
n=$((nodes * per)) pids=()
cache=$(mktemp -d)
for ((r = n - 1; r >= 0; r--)); do
  to=/dev/null; [ $r = 0 ] && to=$out
  node_rank tutti-x $r $n $per TUTTI_CACHE_DIR=$cache "$@" >"$to" 2>"$to.err" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
rm -rf "$cache"
