#!/usr/bin/env bash
# The cost model's predictions beside tutti's own times across namespace
# nodes (tests/multinode/netns.sh), with nothing to compare against but
# itself: tutti-perf alone, each layout PASSES times, ranks in blocks, only
# the interface set. Each pass's CSV carries the model's choice and predicted
# time per size (tuttiCommLastChoice), set beside that pass's time.
#
#   bench/model_drift.sh                 (root; writes bench/results/model_drift.md)
#   LAYOUTS="2x2 4x1 3x2" PASSES=3 RATE=none BUILD_DIR=build OUT=bench/results bench/model_drift.sh
#
# RATE shapes every node's link both ways with tbf ("none": veth as it is).
set -euo pipefail
cd "$(dirname "$0")/.."
LAYOUTS=${LAYOUTS:-"2x2 4x1 3x2"}
PASSES=${PASSES:-3}
RATE=${RATE:-none}
OUT=${OUT:-bench/results}
BUILD_DIR=${BUILD_DIR:-build}
prefix=tutti-md
raw=$(mktemp -d /tmp/model-drift.XXXX)
[ -x "$BUILD_DIR/bench/tutti-perf" ] || BUILD_DIR=$BUILD_DIR scripts/build.sh >/dev/null
perf=$(pwd)/$BUILD_DIR/bench/tutti-perf
most=0
for l in $LAYOUTS; do [ "${l%x*}" -gt $most ] && most=${l%x*}; done
shaped=""
[ "$RATE" != none ] && shaped=$RATE
trap 'tests/multinode/netns.sh down $most $prefix >/dev/null 2>&1 || true' EXIT
tests/multinode/netns.sh up "$most" $prefix $shaped >/dev/null
source bench/node_ranks.sh
for layout in $LAYOUTS; do
  for pass in $(seq 1 "$PASSES"); do
    dir=$raw/$RATE/$layout/pass$pass
    mkdir -p "$dir"
    node_ranks $prefix "${layout%x*}" "${layout#*x}" "$dir/tutti.csv" "$perf" -b 8 -e 64M -f 2 -n 20 -w 5 ||
      echo "FAILED: $layout pass $pass (logs in $dir)" >&2
  done
done
python3 bench/model_drift.py "$raw/$RATE" "$OUT/model_drift.md" "$*"
echo "raw outputs: $raw" >&2
