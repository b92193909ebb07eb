#!/usr/bin/env bash
# ab1.sh N ROUNDS LIBA LIBB ARGS...: tutti-perf on one host, two libs alternated
# Diagnostic script of stop 64, kept as it ran (scratch paths under /tmp; libraries are CPU-only
# builds copied to /tmp/libs/NAME). See ../../calls_beside_compute.md.
n=$1 rounds=$2 a=$3 b=$4; shift 4
for ((i=1;i<=rounds;i++)); do
  if [ $((i % 2)) = 1 ]; then order="$a $b"; else order="$b $a"; fi
  for v in $order; do
    ./x1.sh $n H LD_LIBRARY_PATH=/tmp/libs/$v TUTTI_CACHE_DIR=/tmp/s64/c1-$v -- /work/main/build/bench/tutti-perf "$@"
    echo "$i $v $(grep -E '^\s+[0-9]+ ' H.0 | awk '{printf "%s:%s(%s) ", $1, $6, $(NF-3)}')"
  done
done
