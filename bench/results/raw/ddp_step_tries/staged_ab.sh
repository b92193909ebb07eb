#!/bin/bash
# Alternates tutti-perf's 4-rank 14 MiB all-reduce (one host) with the staged
# prototype, built first: g++ -O3 -march=native -o /tmp/staged_allreduce staged_allreduce.cpp
# Its arguments: MiB, calls (the first 3 untimed), MiB a segment.
cd "$(dirname "$0")/../../../.."
for round in 1 2 3 4; do
  echo -n "round $round tutti: "
  build/bench/tutti-perf -np 4 -b 14M -e 14M -n 40 -w 5 -c 0 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s us (%s)\n", $6, $(NF-3)}'
  for seg in 14 4 1; do echo -n "round $round staged, $seg MiB segments: "; /tmp/staged_allreduce 14 43 $seg; done
done
