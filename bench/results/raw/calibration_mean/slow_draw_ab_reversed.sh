#!/usr/bin/env bash
# ab.sh ROUNDS: bench/model_drift.sh (2x2, 4x1, 3x2 veth, 3 passes each), base (CPU-only build
# of HEAD, /tmp/s68/wt/B, XP_STAT unset: as committed) and new (the same with the slow-draw
# factor, /tmp/s68/wt2/B) alternated; each run starts with an empty TUTTI_CACHE_DIR of its own.
cd /work/main  # scratch worktrees: /tmp/s68/wb (ee77cdb) and /tmp/s68/wn (28354b3), CPU-only Release builds
for ((i=1;i<=$1;i++)); do for S in base new; do
  b=../../tmp/s68/wb/B; [ $S = new ] && b=../../tmp/s68/wn/B
  rm -rf /tmp/s68/md3/cache_$S; mkdir -p /tmp/s68/md3/cache_$S /tmp/s68/md3/${S}_$i
  TUTTI_CACHE_DIR=/tmp/s68/md3/cache_$S BUILD_DIR=$b OUT=/tmp/s68/md3/${S}_$i \
    bench/model_drift.sh > /tmp/s68/md3/${S}_$i/log 2>&1
  echo "$S $i done $(date +%T)"
done; done
