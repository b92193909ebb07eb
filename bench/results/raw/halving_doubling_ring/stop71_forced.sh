#!/bin/bash
# stop71_forced.sh ROUNDS: on 4 x 1 nodes with 4 Gbit/s links, rings and
# halving-doubling forced (TUTTI_ALGO) and tutti's own choice, alternated.
here=$(dirname "$0")
for r in $(seq 1 "$1"); do
  for a in ring hd auto; do
    e=(); [ $a != auto ] && e=(TUTTI_ALGO=$a)
    "$here/stop71_launch.sh" 4 1 /tmp/stop71.out "${e[@]}" build/bench/tutti-perf -b 4M -e 64M -f 4 -n 8 -w 2 -c 0
    echo "$a: $(grep -E '^ +[0-9]' /tmp/stop71.out | awk '{printf "%sM %s us %s GB/s %s; ", $1/1048576, $6, $8, $(NF-3)}')"
  done
done
