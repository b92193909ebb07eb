#!/bin/bash
# A/B on 2x2: two configurations "NAME:LIB:ENV..." alternated (diagnostic only).
# Diagnostic script of stop 64, kept as it ran (scratch paths under /tmp; libraries are CPU-only
# builds copied to /tmp/libs/NAME). See ../../calls_beside_compute.md.
cd /work/main
rounds=$1; a=$2; b=$3; out=$4
tests/multinode/netns.sh up 2 tutti-st >/dev/null
for r in $(seq 1 $rounds); do
  if [ $((r % 2)) = 1 ]; then order="$a $b"; else order="$b $a"; fi
  for cfg in $order; do
    name=${cfg%%:*}; rest=${cfg#*:}; lib=${rest%%:*}; extra=${rest#*:}; [ "$extra" = "$rest" ] && extra=""
    mkdir -p /tmp/s64/ncache-$name
    env $(echo $extra | tr ',' ' ') LD_LIBRARY_PATH=/tmp/libs/$lib TUTTI_CACHE_DIR=/tmp/s64/ncache-$name PYTHONPATH=$PWD/build/python TUTTI_BENCH_PASSES=2 \
      tests/python/run_torchrun_nodes.sh $PWD/.venv/bin/python 2 2 $PWD/bench/torch_step_time.py tutti-st 2>&1 |
      sed -n 's/^\[node 0\] \(\[default0\]:\)\?\({.*}\)$/\2/p' | sed "s/^{/{\"lib\": \"$name\", \"round\": $r, /" >> $out
  done
done
