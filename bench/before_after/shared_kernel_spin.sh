#!/usr/bin/env bash
# Ranks of network nodes that share one kernel (namespaces on this machine)
# before and after they count each other as sharing cores: 2 namespace nodes
# x 2 ranks (tests/multinode/netns.sh), float32 sum all-reduce 8 B to 1 MiB,
# tutti-perf at BEFORE and at AFTER (built in git worktrees, host code only),
# ROUNDS passes in turn. Prints a markdown table: median us a call of each.
#   bench/before_after/shared_kernel_spin.sh [ROUNDS] [BEFORE] [AFTER]    (root)
set -euo pipefail
rounds=${1:-3}
before=${2:-b3c4db4}
after=${3:-HEAD}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
prefix=tutti-sp
source "$repo/bench/before_after/worktree_build.sh"
build_before_after_on_nodes "$before" "$after" 2 $prefix
"$netns" up 2 $prefix >/dev/null
source "$repo/tests/multinode/netns_ranks.sh"

for ((i = 0; i < rounds; i++)); do
  for t in before after; do
    netns_ranks "$work/$t/build/bench/tutti-perf" $prefix 2 2 "$work/log" -- \
      -b 8 -e 1M -f 8 -n 200 -w 20 --json "$work/$t.$i.json" >/dev/null
  done
done
python3 - "$work" "$rounds" "$before" "$after" <<'PY'
import json, statistics, sys
work, rounds, before, after = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def times(tag):
    runs = [json.load(open(f"{work}/{tag}.{i}.json"))["results"] for i in range(rounds)]
    sizes = [r["size"] for r in runs[0] if r["placement"] == "out-of-place"]
    return {s: statistics.median(r["time_us"] for run in runs for r in run
                                 if r["size"] == s and r["placement"] == "out-of-place") for s in sizes}
b, a = times("before"), times("after")
print(f"| size | before ({before}) us | after ({after}) us | after / before |")
print("| --- | --- | --- | --- |")
for s in b:
    print(f"| {s} B | {b[s]:.1f} | {a[s]:.1f} | {a[s] / b[s]:.2f} |")
PY
