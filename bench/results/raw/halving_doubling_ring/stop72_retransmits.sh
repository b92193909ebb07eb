#!/usr/bin/env bash
# TCP segments retransmitted on 4 x 1 namespace nodes (veth as it is) while
# tutti-perf runs 1-64 MiB all-reduces by one algorithm (TUTTI_ALGO), summed
# over the nodes (nstat), and with PIN=1 each rank pinned (taskset: ranks
# 0-1 on core 0, 2-3 on core 1) under halving-doubling. DSACKs received
# (TcpExtTCPDSACKRecvSegs) show most of them spurious: segments reordered,
# not lost. Needs the nodes first: tests/multinode/netns.sh up 4 tutti-x
cd "$(dirname "$0")/../../../.."
source bench/node_ranks.sh
out=${OUT:-/tmp/stop72_retransmits}
mkdir -p "$out"
count() {
  local s=0 v i
  for i in 0 1 2 3; do
    v=$(ip netns exec tutti-x-n$i nstat -az "$1" | awk -v k="$1" '$1==k{print $2}')
    s=$((s + v))
  done
  echo $s
}
launch() {  # NAME ALGO PIN
  local pids=() r pre extra
  node_ranks_port=$((node_ranks_port + 1))
  for r in 3 2 1 0; do
    pre=()
    [ "$3" = 1 ] && pre=(taskset -c $((r / 2)))
    extra=()
    [ $r = 0 ] && extra=(--csv "$out/$1.csv")
    node_rank tutti-x $r 4 1 TUTTI_ALGO=$2 TUTTI_CACHE_DIR="$out/cache.$1" "${pre[@]}" \
      build/bench/tutti-perf -b 1M -e 64M -f 4 -n 20 -w 5 "${extra[@]}" >"$out/$1.$r.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
}
for round in 1 2 3; do
  for run in "ring 0" "hd 0" "tree 0" "hd 1"; do
    set -- $run
    name=$1.pin$2.$round
    b=$(count TcpRetransSegs) d=$(count TcpExtTCPDSACKRecvSegs)
    launch "$name" "$1" "$2"
    echo "round $round $1 pinned=$2: retransmitted $(($(count TcpRetransSegs) - b)), DSACKed $(($(count TcpExtTCPDSACKRecvSegs) - d));" \
      "$(awk -F, '$8=="out-of-place"{printf "%s MiB %.1f ms  ",$3/1048576,$9/1000}' "$out/$name.csv")"
  done
done
