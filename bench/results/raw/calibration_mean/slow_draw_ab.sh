#!/usr/bin/env bash
# slow_draw_ab.sh ROUNDS OUT "FIRST SECOND": bench/model_drift.sh (2x2, 4x1, 3x2 veth, 3 passes
# each) with the base and the new library alternated, FIRST of each round first; each run starts
# with an empty TUTTI_CACHE_DIR of its own. BASE and NEW: CPU-only Release build folders, as
# relative paths from the checkout (model_drift.sh's BUILD_DIR). As they ran (scratch worktrees):
#   rounds 1-3: BASE=../../tmp/s68/wt/B (ee77cdb with statistic_switch.diff, XP_STAT unset)
#               NEW=../../tmp/s68/wt2/B (the change)   slow_draw_ab.sh 3 /tmp/s68/md2 "new base"
#   rounds 4-5: BASE=../../tmp/s68/wb/B (ee77cdb) NEW=../../tmp/s68/wn/B (28354b3)
#                                                     slow_draw_ab.sh 2 /tmp/s68/md3 "base new"
cd /work/main
rounds=$1 out=$2 order=$3
for ((i = 1; i <= rounds; i++)); do for S in $order; do
  b=$BASE; [ "$S" = new ] && b=$NEW
  rm -rf "$out/cache_$S"; mkdir -p "$out/cache_$S" "$out/${S}_$i"
  TUTTI_CACHE_DIR=$out/cache_$S BUILD_DIR=$b OUT=$out/${S}_$i bench/model_drift.sh > "$out/${S}_$i/log" 2>&1
  echo "$S $i done $(date +%T)"
done; done
