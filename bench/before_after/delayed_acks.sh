#!/usr/bin/env bash
# Receiving sockets before and after they keep the kernel's delayed ACKs:
# tutti-perf at BEFORE and AFTER (git worktrees, host code only) on
# namespace nodes (tests/multinode/netns.sh), 4 nodes x 1 rank and 2 x 2,
# veth as it is and shaped to 4 Gbit/s, float32 sum all-reduce 8 B to 16 MiB,
# ROUNDS launches of each in turn, each with a cache of its own kept across
# rounds (as across_nodes.sh keeps one). Also counts the segments node 0
# sent that carried no data (ACKs, window updates) per 8-byte call: two
# launches of different lengths, the difference over the calls between them.
# Prints markdown: per launch, out-of-place us a call and the algorithm.
#   bench/before_after/delayed_acks.sh [ROUNDS] [BEFORE] [AFTER]     (root)
set -euo pipefail
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
prefix=tutti-x
source "$repo/bench/before_after/worktree_build.sh"
before_after_script 365ce94 4 "$@"

# Segments without data node 0 sent during a launch of N 8-byte calls (twice: out of and in place).
bare_segments() {
  local t=$1 nodes=$2 per=$3 n=$4
  ip netns exec $prefix-n0 nstat -n >/dev/null
  launch_on_nodes "$t" "$nodes" "$per" "$work/seg.csv" -b 8 -e 8 -n "$n" -w 100 >/dev/null
  ip netns exec $prefix-n0 nstat | awk '$1=="TcpOutSegs"{o=$2} $1=="TcpExtTCPOrigDataSent"{d=$2} END{print o-d}'
}

# acks_row ROUND TAG NODES PER: a launch's us a call, then its segments without data.
acks_row() {
  local i=$1 t=$2 nodes=$3 per=$4 cells short long
  launch_on_nodes $t "$nodes" "$per" "$work/$t.csv" -b 8 -e 16M -f 8 -n 20 -w 5 >/dev/null
  cells=$(awk -F, '$8=="out-of-place"{printf "%.1f %s | ", $9, $13}' "$work/$t.csv")
  short=$(bare_segments $t "$nodes" "$per" 200)
  long=$(bare_segments $t "$nodes" "$per" 2200)
  echo "| $i | $t | ${cells}$(awk -v s="$short" -v l="$long" 'BEGIN{printf "%.2f", (l - s) / 4000}') |"
}
tables_in_turn 4 "$rounds" "| round | library | 8 B | 64 B | 512 B | 4 KiB | 32 KiB | 256 KiB | 2 MiB | 16 MiB | segments without data per call |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |" acks_row "4 1" "2 2"
