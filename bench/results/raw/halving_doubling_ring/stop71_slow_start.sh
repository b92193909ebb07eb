#!/bin/bash
# stop71_slow_start.sh ROUNDS: halving-doubling forced on 4 x 1 nodes, with the
# nodes' net.ipv4.tcp_slow_start_after_idle at its default (1) and at 0,
# alternated; put back to 1 after.
here=$(dirname "$0")
set_all() { for i in 0 1 2 3; do ip netns exec tutti-x-n$i sysctl -qw net.ipv4.tcp_slow_start_after_idle=$1; done; }
trap 'set_all 1' EXIT
for r in $(seq 1 "$1"); do
  for v in 1 0; do
    set_all $v
    "$here/stop71_launch.sh" 4 1 /tmp/stop71.out TUTTI_ALGO=hd build/bench/tutti-perf -b 4M -e 64M -f 4 -n 8 -w 2 -c 0
    echo "slow start after idle $v: $(grep -E '^ +[0-9]' /tmp/stop71.out | awk '{printf "%sM %s us %s GB/s; ", $1/1048576, $6, $8}')"
  done
done
