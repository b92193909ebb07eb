#!/usr/bin/env bash
# ab.sh ROUNDS: bench/model_drift.sh (2x2, 4x1, 3x2 veth, 3 passes each) with the scratch
# build of HEAD, init's statistic as committed (trim) and the mean without stalls (cap4),
# alternated; each run starts with an empty TUTTI_CACHE_DIR of its own.
cd /work/main  # scratch worktrees: /tmp/s68/wt (HEAD with statistic_switch.diff), /tmp/s68/wt2 (the change)
for ((i=1;i<=$1;i++)); do for S in trim cap4; do
  rm -rf /tmp/s68/md/cache_$S; mkdir -p /tmp/s68/md/cache_$S /tmp/s68/md/${S}_$i
  TUTTI_CACHE_DIR=/tmp/s68/md/cache_$S XP_STAT=$S BUILD_DIR=../../tmp/s68/wt/B OUT=/tmp/s68/md/${S}_$i \
    bench/model_drift.sh > /tmp/s68/md/${S}_$i/log 2>&1
  echo "$S $i done $(date +%T)"
done; done
