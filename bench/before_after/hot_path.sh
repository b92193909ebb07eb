#!/usr/bin/env bash
# Small calls before and after a change to their path, beside Open MPI:
# builds tutti-perf at BEFORE (default a14d5c2, before stop 33's thinner hot
# path) and AFTER (default HEAD), each in a git worktree, and bench/peers/
# mpi_small.cpp; then, per row, ROUNDS times in turn: Open MPI, before,
# after. Prints a markdown table of us a call (tutti: out of place; 20,000
# calls after 2,000 untimed, as both sides time them).
#   bench/before_after/hot_path.sh [ROUNDS] [BEFORE] [AFTER]
set -euo pipefail
rounds=${1:-5}
before=${2:-a14d5c2}
after=${3:-HEAD}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
source "$repo/bench/before_after/worktree_build.sh"
build_before_after "$before" "$after"
"$repo/bench/peers/build_mpi_small.sh" "$work/mpi_small"

ompi=(mpirun --allow-run-as-root --oversubscribe --mca pml ob1 --mca oob_tcp_if_include lo --mca btl self,vader)
tutti() {  # tutti NAME NP COLL BYTES
  "$work/$1/build/bench/tutti-perf" -np "$2" -C "$3" -b "$4" -e "$4" -n 20000 -w 2000 --json "$work/t.json" >/dev/null
  python3 -c "import json,sys; print('%.3f' % json.load(open(sys.argv[1]))['results'][0]['time_us'])" "$work/t.json"
}
echo "| N, call, bytes | Open MPI | tutti before ($before) | tutti after ($after) |"
echo "|---|---|---|---|"
for row in "2 broadcast 8" "2 broadcast 16" "2 broadcast 32" "2 broadcast 64" "2 allreduce 8" "2 barrier 0" \
           "4 broadcast 8" "4 allreduce 8"; do
  read -r np coll bytes <<<"$row"
  o="" b="" a=""
  for _ in $(seq 1 "$rounds"); do
    o+=" $("${ompi[@]}" -np "$np" "$work/mpi_small" 20000 "$coll" "$bytes" | awk '{print $3}')"
    b+=" $(tutti before "$np" "$coll" "$bytes")"
    a+=" $(tutti after "$np" "$coll" "$bytes")"
  done
  echo "| $np, $coll, $bytes |$o |$b |$a |"
done
