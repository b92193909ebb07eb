#!/usr/bin/env bash
# Halving-doubling before and after it pipelines large calls (the rounds
# inside nodes beside those across): tutti-perf at BEFORE and AFTER (git
# worktrees, host code only) on namespace nodes (tests/multinode/netns.sh),
# 2 nodes x 2 ranks and 3 x 2, veth as it is and shaped to 4 Gbit/s, float32
# sum all-reduce 1 to 64 MiB with tutti's own choices, ROUNDS launches of
# each in turn, each with a cache of its own kept across rounds (as
# across_nodes.sh keeps one). Prints markdown: per launch, out-of-place
# busbw (GB/s) and the algorithm chosen.
#   bench/before_after/pipelined_halving_doubling.sh [ROUNDS] [BEFORE] [AFTER]     (root)
set -euo pipefail
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
prefix=tutti-x
source "$repo/bench/before_after/worktree_build.sh"
before_after_script 61fba1c 3 "$@"

# busbw_row ROUND TAG NODES PER
busbw_row() {
  launch_on_nodes $2 "$3" "$4" "$work/$2.csv" -b 1M -e 64M -f 4 -n 10 -w 3 >/dev/null
  echo "| $1 | $2 | $(awk -F, '$8=="out-of-place"{printf "%.3f %s %sch | ", $11, $13, $14}' "$work/$2.csv")"
}
tables_in_turn 3 "$rounds" "| round | library | 1 MiB | 4 MiB | 16 MiB | 64 MiB |
| --- | --- | --- | --- | --- | --- |" busbw_row "2 2" "3 2"
