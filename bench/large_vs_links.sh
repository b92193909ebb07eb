#!/usr/bin/env bash
# tutti's large all-reduces across namespace nodes against the links' rate
# (issue 35: 90% of a shaped link's rate from 16 MiB) and against what a plain
# ring of one TCP stream a link carries in the same pass: the nodes share this
# machine's 2 cores, so the kernel's own copies may cap the links first.
#
#   bench/large_vs_links.sh                 (root; writes bench/results/large_vs_links.md)
#   RATES="none 4gbit" PASSES=3 OUT=bench/results bench/large_vs_links.sh
#
# In each pass, for each layout NODESxRANKS (2x2, 3x2, 4x1): a ring of TCP
# streams with one process a node (bench/peers/tcp_ring.cpp: every node sends
# and receives at once, nothing reduced), then tutti-perf's float32 sum
# all-reduce at 16 and 64 MiB on the layout (its own choices, only the
# interface set, a cache of the run's for each layout and rate).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
RATES=${RATES:-"none 4gbit"}
LAYOUTS=${LAYOUTS:-"2x2 3x2 4x1"}
PASSES=${PASSES:-3}
OUT=${OUT:-bench/results}
prefix=tutti-lv
netns=$root/tests/multinode/netns.sh
raw=${RAW:-$(mktemp -d /tmp/large-vs-links.XXXX)}
scripts/build.sh >/dev/null
perf=$root/build/bench/tutti-perf
g++ -std=c++20 -O2 -pthread bench/peers/tcp_ring.cpp -o "$raw/tcp_ring"
port=$((33000 + RANDOM % 1000))

# ring NODES FILE: one tcp_ring process a node, 16 and 64 MiB.
ring() {
  local nodes=$1 file=$2 bytes i pids=()
  for bytes in $((16 << 20)) $((64 << 20)); do
    port=$((port + 8))
    pids=()
    for ((i = 0; i < nodes; i++)); do
      ip netns exec "$prefix-n$i" "$raw/tcp_ring" $i "$nodes" "10.77.0.$(((i + 1) % nodes + 1))" $port $bytes 5 >>"$file" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
  done
}

source bench/node_ranks.sh
# allreduce NODES PER CSV: tutti-perf per rank in its node, torchrun's variables.
allreduce() {
  node_ranks $prefix "$1" "$2" "$3" TUTTI_CACHE_DIR="$cache" "$perf" -b 16M -e 64M -f 4 -n 10 -w 3
}

trap '$netns down 4 $prefix >/dev/null 2>&1 || true' EXIT
for rate in $RATES; do
  shaped=""
  [ "$rate" != none ] && shaped=$rate
  $netns up 4 $prefix $shaped >/dev/null
  for pass in $(seq 1 "$PASSES"); do
    for layout in $LAYOUTS; do
      nodes=${layout%x*} per=${layout#*x}
      cache=$raw/cache/$rate/$layout
      dir=$raw/$rate/$layout/pass$pass
      mkdir -p "$cache" "$dir"
      echo "== $rate $layout pass $pass" >&2
      ring "$nodes" "$dir/ring.txt"
      allreduce "$nodes" "$per" "$dir/tutti.csv"
    done
  done
done
python3 bench/large_vs_links.py "$raw" "$OUT/large_vs_links.md" "bench/large_vs_links.sh"
echo "raw outputs: $raw" >&2
