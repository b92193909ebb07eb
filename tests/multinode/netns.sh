#!/usr/bin/env bash
# Nodes for multi-node tests and benchmarks: network namespaces on this machine.
#
#   netns.sh up K [PREFIX] [RATE]   K nodes PREFIX-n0..n{K-1}, joined by a bridge
#                                   in namespace PREFIX-fabric; RATE (e.g. 1gbit)
#                                   shapes every node's link to the bridge with tbf
#   netns.sh down K [PREFIX]
#   netns.sh can                    exit 0 when namespaces can be made here
#
# Each node has two interfaces besides lo: data0 (10.77.0.<i+1>/24) reaches
# the other nodes through the bridge; side0 (10.78.<i>.1/24) is the end of a
# veth pair that stays inside the node, so it reaches nothing else. Traffic
# never leaves namespaces this script made.
set -euo pipefail

cmd=${1:-}
prefix=${3:-tutti-t}

can() {
  [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v tc >/dev/null || return 1
  local probe="${prefix}-probe$$"
  ip netns add "$probe" 2>/dev/null || return 1
  ip netns del "$probe"
}

down() {
  local k=$1
  for ((i = 0; i < k; i++)); do ip netns del "${prefix}-n$i" 2>/dev/null || true; done
  ip netns del "${prefix}-fabric" 2>/dev/null || true
}

up() {
  local k=$1 rate=${2:-}
  down "$k"
  ip netns add "${prefix}-fabric"
  ip -n "${prefix}-fabric" link add br0 type bridge
  ip -n "${prefix}-fabric" link set br0 up
  for ((i = 0; i < k; i++)); do
    local ns="${prefix}-n$i"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add data0 netns "$ns" type veth peer name "p$i" netns "${prefix}-fabric"
    ip -n "${prefix}-fabric" link set "p$i" master br0 up
    ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev data0
    ip -n "$ns" link set data0 up
    ip link add side0 netns "$ns" type veth peer name side0peer netns "$ns"
    ip -n "$ns" addr add "10.78.$i.1/24" dev side0
    ip -n "$ns" link set side0 up
    ip -n "$ns" link set side0peer up
    if [ -n "$rate" ]; then
      # Both directions: the node's egress, and the bridge port's egress towards the node.
      ip netns exec "$ns" tc qdisc add dev data0 root tbf rate "$rate" burst 256kb latency 20ms
      ip netns exec "${prefix}-fabric" tc qdisc add dev "p$i" root tbf rate "$rate" burst 256kb latency 20ms
    fi
  done
}

case "$cmd" in
  can) can ;;
  up)
    if ! can; then
      echo "netns.sh: cannot create network namespaces here (needs root, iproute2 and tc); multi-node tests will skip"
      exit 0
    fi
    up "$2" "${4:-}"
    echo "netns.sh: $2 node namespaces ${prefix}-n0..n$(($2 - 1)) are up${4:+, links shaped to $4}"
    ;;
  down) down "$2" ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
