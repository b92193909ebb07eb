#!/usr/bin/env bash
# tutti-perf float32 sum all-reduce over UCX against tutti's own socket
# transport, every pair of ranks on the network transport (TUTTI_SHM_DISABLE=1):
#   1. one host, 2 and 4 ranks: socket on lo; UCX_TLS=tcp on lo; UCX_TLS=sm,self
#   2. two nodes made of network namespaces (tests/multinode/netns.sh, root),
#      1 rank each: socket and UCX_TLS=tcp, both on data0
# Configurations alternate within each pass, PASSES times, so a shared
# machine's drift hits all alike. Writes OUT (markdown) and the CSVs beside it.
#   bench/ucx_vs_socket.sh [OUT.md]      PASSES=2 BUILD_DIR=build
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/ucx_vs_socket.md}
PASSES=${PASSES:-2}
build=${BUILD_DIR:-build}
perf=$build/bench/tutti-perf
raw=$(dirname "$out")/raw/ucx_vs_socket
rm -rf "$raw"
mkdir -p "$raw"
args=(-b 8 -e 64M -f 4 -n 10 -w 5)
export TUTTI_SHM_DISABLE=1 TUTTI_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo

host() {  # pass ranks config
  local env=()
  case $3 in
    ucx_tcp) env=(TUTTI_NET=ucx UCX_TLS=tcp) ;;
    ucx_sm) env=(TUTTI_NET=ucx UCX_TLS=sm,self) ;;
  esac
  env "${env[@]}" "$perf" -np "$2" "${args[@]}" --csv "$raw/p$1_host_$2_$3.csv" >"$raw/p$1_host_$2_$3.txt"
}

prefix=tutti-u
netns=tests/multinode/netns.sh
port=29800
nodes() {  # pass config: 2 namespace nodes, one rank each
  local env=() pids=() rc=0
  [[ $2 == ucx_tcp ]] && env=(TUTTI_NET=ucx UCX_TLS=tcp)
  port=$((port + 1))
  for r in 1 0; do
    ip netns exec "$prefix-n$r" env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 TUTTI_COMM_ID=10.77.0.1:$port \
      TUTTI_SOCKET_IFNAME=data UCX_NET_DEVICES=data0 "${env[@]}" \
      "$perf" "${args[@]}" --csv "$raw/p$1_nodes_2_$2.csv.$r" >"$raw/p$1_nodes_2_$2.txt.$r" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  mv "$raw/p$1_nodes_2_$2.csv.0" "$raw/p$1_nodes_2_$2.csv"
  rm -f "$raw/p$1_nodes_2_$2.csv.1"
  return $rc
}

have_nodes=0
if $netns can 2 $prefix >/dev/null 2>&1 && $netns up 2 $prefix >/dev/null 2>&1; then
  have_nodes=1
  trap '$netns down 2 $prefix >/dev/null 2>&1' EXIT
fi
for pass in $(seq 1 "$PASSES"); do
  for ranks in 2 4; do
    for config in socket ucx_tcp ucx_sm; do host "$pass" "$ranks" "$config"; done
  done
  if ((have_nodes)); then
    for config in socket ucx_tcp; do nodes "$pass" "$config"; done
  fi
done
python3 bench/ucx_vs_socket.py "$raw" "$PASSES" "bench/ucx_vs_socket.sh $*" >"$out"
cat "$out"
