#!/bin/bash
# TUTTI_DETERMINISTIC=1 beside the default, same run, same machine: all-reduce
# and reduce-scatter busbw from 1 MiB up, 2 and 4 ranks, shared memory and
# TCP loopback; each pair interleaved, PASSES passes. Prints tutti-perf's
# busbw column (out of place) per size for each setting.
set -euo pipefail
PERF=${PERF:-build/bench/tutti-perf}
PASSES=${PASSES:-2}
export TUTTI_SOCKET_IFNAME=lo
busbw() {  # prints "size busbw" rows of one tutti-perf run
  "$PERF" "$@" -b 1M -e 64M -f 4 -n 10 -w 5 | awk '$1 ~ /^[0-9]+$/ && NF > 8 { print $1, $8 }'
}
for pass in $(seq "$PASSES"); do
  for transport in shm socket; do
    for np in 2 4; do
      for coll in allreduce reducescatter; do
        for det in 0 1; do
          shm=0; [ "$transport" = socket ] && shm=1
          echo "## pass $pass $transport np $np $coll deterministic $det"
          TUTTI_SHM_DISABLE=$shm TUTTI_DETERMINISTIC=$det busbw -np "$np" -C "$coll"
        done
      done
    done
  done
done
