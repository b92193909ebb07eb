#!/usr/bin/env bash
# One host's all-reduce, 8 B to 16 MiB, before and after a change: builds
# tutti-perf at BEFORE and AFTER (default HEAD), each in a git worktree, and
# runs them in turn ROUNDS times for 2 and 4 ranks over shared memory and
# over TCP loopback (TUTTI_SHM_DISABLE=1, as bench/compare_peers.sh runs
# it). Prints a markdown table: us a call (out of place) per round, and the
# median of after over before.
#   bench/before_after/one_host.sh [ROUNDS] [BEFORE] [AFTER]
set -euo pipefail
rounds=${1:-3}
before=${2:?BEFORE commit}
after=${3:-HEAD}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
source "$repo/bench/before_after/worktree_build.sh"
build_before_after "$before" "$after"

run() {  # run NAME NP SHM_DISABLE CSV
  TUTTI_SOCKET_IFNAME=lo TUTTI_SHM_DISABLE=$3 "$work/$1/build/bench/tutti-perf" -np "$2" -b 8 -e 16M -f 8 \
    -n 20 -w 5 --csv "$4" >/dev/null
}
for config in "2 0" "2 1" "4 0" "4 1"; do
  read -r np tcp <<<"$config"
  for r in $(seq 1 "$rounds"); do
    for side in before after; do run "$side" "$np" "$tcp" "$work/$side.$np.$tcp.$r.csv"; done
  done
done
python3 - "$work" "$rounds" "$before" "$after" <<'EOF'
import csv, statistics, sys
work, rounds, before, after = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def times(side, np, tcp, r):
    with open(f"{work}/{side}.{np}.{tcp}.{r}.csv") as f:
        return {int(row["size"]): float(row["time_us"]) for row in csv.DictReader(f) if row["placement"] == "out-of-place"}
print(f"| ranks, path, bytes | tutti before ({before}), us | tutti after ({after}), us | after / before (median) |")
print("|---|---|---|---|")
for np in (2, 4):
    for tcp in (0, 1):
        b = [times("before", np, tcp, r) for r in range(1, rounds + 1)]
        a = [times("after", np, tcp, r) for r in range(1, rounds + 1)]
        for size in sorted(b[0]):
            bs, as_ = [x[size] for x in b], [x[size] for x in a]
            ratio = statistics.median(as_) / statistics.median(bs)
            path = "TCP loopback" if tcp else "shared memory"
            print(f"| {np}, {path}, {size} | {' '.join('%.1f' % x for x in bs)} | {' '.join('%.1f' % x for x in as_)} | {ratio:.2f} |")
EOF
