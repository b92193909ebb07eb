#!/usr/bin/env bash
# Does topology pay off? tutti-perf across nodes made of network namespaces
# (tests/multinode/netns.sh), with every node's link to the others shaped by
# tc (tbf, RATE each way) and shared memory inside nodes left as it is.
#
#   bench/multinode_bench.sh BUILD_DIR OUT.md [RATE]     (root; RATE default 1gbit)
#
# 1. Hierarchical vs flat ring: 3 nodes x 2 ranks, rank r on node r % 3, so a
#    ring in rank order crosses nodes at every hop; TUTTI_RING_ORDER=topo
#    keeps each node's ranks adjacent (3 crossings instead of 6).
# 2. Tree vs ring for small messages over 4 and 8 nodes (1 rank each).
set -euo pipefail
build=${1:?build dir}
out=${2:?output file}
rate=${3:-1gbit}
here=$(cd "$(dirname "$0")/.." && pwd)
perf=$build/bench/tutti-perf
prefix=tutti-b
netns=$here/tests/multinode/netns.sh

source "$here/tests/multinode/netns_ranks.sh"
# run NODES RANKS_PER_NODE ENV... -- PERF_ARGS...: prints rank 0's table
run() {
  local nodes=$1 per=$2 rc=0
  shift 2
  netns_ranks "$perf" "$prefix" "$nodes" "$per" "/tmp/$prefix.log" "$@" || rc=1
  cat "/tmp/$prefix.log"
  return $rc
}

section() { printf '\n### %s\n\n```\n' "$1" >>"$out"; }
endsection() { printf '```\n' >>"$out"; }

{
  echo "# Topology pays off: shaped links between namespace nodes"
  echo
  echo "Made by \`bench/multinode_bench.sh $build $out $rate\` on $(date -u +%F), $(nproc) cores."
  echo "Every node's data0 link is shaped to $rate each way (tc tbf); inside a node, shared memory."
} >"$out"

$netns up 8 $prefix "$rate" >/dev/null
trap '$netns down 8 $prefix' EXIT

for order in rank topo; do
  section "3 nodes x 2 ranks (rank r on node r % 3), rings, TUTTI_RING_ORDER=$order"
  run 3 2 TUTTI_ALGO=ring TUTTI_RING_ORDER=$order -- -b 1M -e 64M -f 4 -n 5 -w 2 | tee -a "$out"
  endsection
done

for nodes in 4 8; do
  for algo in ring tree; do
    section "$nodes nodes x 1 rank, TUTTI_ALGO=$algo, small messages"
    run "$nodes" 1 TUTTI_ALGO=$algo -- -b 8 -e 64K -f 8 -n 200 -w 20 | tee -a "$out"
    endsection
  done
  section "$nodes nodes x 1 rank, cost model's choice (TUTTI_ALGO unset)"
  rm -f /tmp/$prefix-tuning.*
  run "$nodes" 1 TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=TUNING TUTTI_DEBUG_FILE=/tmp/$prefix-tuning.%p \
    -- -b 8 -e 64K -f 8 -n 200 -w 20 | tee -a "$out"
  echo "choices logged by TUTTI_DEBUG_SUBSYS=TUNING (all ranks, distinct):" >>"$out"
  cat /tmp/$prefix-tuning.* | grep -o 'allreduce #[0-9]* [0-9]* bytes: [a-z]*, [0-9]* channel' \
    | sed 's/#[0-9]* //' | sort -u -k2,2n >>"$out"
  endsection
done
