#!/bin/bash
# A/B on one host, 4 ranks: DDP/FSDP2 step time, two libs alternated (diagnostic).
# Diagnostic script of stop 65, kept as it ran (scratch paths under /tmp; libraries are CPU-only
# builds copied to /tmp/libs/NAME). See ../../ddp_step_tries.md.
# Diagnostic script of stop 64, kept as it ran (scratch paths under /tmp; libraries are CPU-only
# builds copied to /tmp/libs/NAME). See ../../calls_beside_compute.md.
cd /work/main
rounds=$1; a=$2; b=$3; out=$4
for r in $(seq 1 $rounds); do
  if [ $((r % 2)) = 1 ]; then order="$a $b"; else order="$b $a"; fi
  for name in $order; do
    mkdir -p /tmp/s65/hcache-$name
    LD_LIBRARY_PATH=/tmp/libs/$name TUTTI_CACHE_DIR=/tmp/s65/hcache-$name PYTHONPATH=$PWD/build/python TUTTI_BENCH_PASSES=2 \
      tests/python/run_torchrun.sh $PWD/.venv/bin/python 4 bench/torch_step_time.py 2>&1 |
      sed -n 's/^\(\[default0\]:\)\?\({.*}\)$/\2/p' | sed "s/^{/{\"lib\": \"$name\", \"round\": $r, /" >> $out
  done
done
