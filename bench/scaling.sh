#!/usr/bin/env bash
# Init time and all-reduce time from 2 to 256 ranks on this machine: ranks
# as processes up to 16, then 16 processes of threads. For each count, the
# slowest rank's init (tutti-perf's header), the 8-byte and 1 MiB float32
# sum all-reduce (out of place, us), and the whole run's wall and CPU time.
#   PERF=build/bench/tutti-perf  RANKS="2 4 ... 256"
# Prints a markdown table.
set -euo pipefail
PERF=${PERF:-build/bench/tutti-perf}
RANKS=${RANKS:-2 4 8 16 32 64 128 256}
export TUTTI_SOCKET_IFNAME=${TUTTI_SOCKET_IFNAME:-lo}
echo "| ranks | processes x threads | init, slowest rank (ms) | 8 B all-reduce (us) | 1 MiB all-reduce (us) | run wall (s) | run CPU, user + sys (s) |"
echo "|---|---|---|---|---|---|---|"
for n in $RANKS; do
  p=$n t=1
  if ((n > 16)); then p=16 t=$((n / 16)); fi
  iters=20
  ((n >= 64)) && iters=5
  out=$(mktemp)
  /usr/bin/time -f "TIME %e %U %S" "$PERF" -np "$p" -t "$t" -b 8 -e 1M -f 131072 -n "$iters" -w 2 >"$out" 2>&1
  init=$(awk '/^# Init:/ { print $3 }' "$out")
  small=$(awk '$1 == 8 && NF > 8 { print $6 }' "$out")
  big=$(awk '$1 == 1048576 && NF > 8 { print $6 }' "$out")
  read -r wall user sys < <(awk '/^TIME/ { print $2, $3, $4 }' "$out")
  wrong=$(awk '/Out of bounds/ { print $7 }' "$out")
  [[ $wrong == 0 ]] || { echo "ranks $n: results wrong" >&2; cat "$out" >&2; exit 1; }
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  printf "| %d | %d x %d | %s | %s | %s | %s | %s |\n" "$n" "$p" "$t" "$init" "$small" "$big" "$wall" "$cpu"
  rm -f "$out"
done
