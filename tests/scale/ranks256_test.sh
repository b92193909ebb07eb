#!/usr/bin/env bash
# 256 ranks on this machine, as 16 processes of 16 threads: every collective,
# at a small and a middling size, with tutti-perf checking every element of
# every result against its own reference (-c 1). One init per collective
# (about 6 s each at 256 ranks on 2 cores); no warm-up (-w 0). All-to-all
# is left out: its 65,280 connections take a minute to make on 2 cores
# (`tutti-perf -np 16 -t 16 -C alltoall ...` passes by hand).
set -euo pipefail
perf=$1
export TUTTI_SOCKET_IFNAME=lo TUTTI_TIMEOUT=300
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for coll in allreduce allgather broadcast reduce reducescatter sendrecv barrier; do
  start=$SECONDS
  # Sizes are the whole buffer: 2 KiB gives each of 256 ranks 8 bytes of a gathered one.
  if ! "$perf" -np 16 -t 16 -C "$coll" -b 2K -e 64K -f 32 -n 1 -w 0 -c 1 -r 255 >"$log" 2>&1 ||
     ! grep -q "Out of bounds values : 0 OK" "$log"; then
    echo "FAILED: $coll with 256 ranks" >&2
    cat "$log" >&2
    exit 1
  fi
  echo "ok: $coll, 256 ranks ($(awk '/^# Init:/ { print $3 }' "$log") ms init, $((SECONDS - start)) s)"
done
