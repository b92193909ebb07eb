#!/usr/bin/env bash
# tutti-perf between network-namespace nodes (ctest's netns fixture), 2 nodes
# x 2 ranks, on host buffers and on device buffers of the emulated device
# (--emulate-device): every result checked, and the device run's log must
# show P2P inside a node and mapped host slots on the network between them.
set -euo pipefail
perf=$1
here=$(cd "$(dirname "$0")" && pwd)
prefix=tutti-t
if [ ! -e /var/run/netns/$prefix-n1 ]; then
  echo "skipped: namespaces $prefix-n0..n1 are not there (needs root)"
  exit 0
fi
source "$here/netns_ranks.sh"
log=$(mktemp)
trap 'rm -f "$log" "$log".*' EXIT
args=(-b 4K -e 4M -f 32 -n 2 -w 1 -c 1)

check() {  # name, then netns_ranks' arguments after PERF and PREFIX
  local name=$1
  shift
  if ! netns_ranks "$perf" "$prefix" "$@" || ! grep -q "Out of bounds values : 0 OK" "$log"; then
    echo "FAILED: $name" >&2
    cat "$log".* >&2
    exit 1
  fi
  echo "ok: $name"
}

check "host buffers, 2 nodes x 2 ranks" 2 2 "$log" TUTTI_TIMEOUT=60 -- "${args[@]}" -d all -o all
check "emulated device, 2 nodes x 2 ranks" 2 2 "$log" TUTTI_TIMEOUT=60 TUTTI_DEBUG=INFO -- \
  "${args[@]}" -d all -o all --emulate-device 1
grep -q "Using device memory (emulated GPUs" "$log"
grep -q "rank 0 -> rank 2 .*device calls over p2p/device" "$log.0" ||
  { echo "FAILED: rank 0 does not reach rank 2 (its node) over p2p/device" >&2; exit 1; }
grep -q "rank 0 -> rank 1 .*device calls over socket/host-mapped" "$log.0" ||
  { echo "FAILED: rank 0 does not reach rank 1 (the other node) over socket/host-mapped" >&2; exit 1; }
echo "ok: routes p2p/device inside the node, socket/host-mapped between nodes"
for coll in allgather reducescatter broadcast alltoall; do
  check "emulated device, -C $coll" 2 2 "$log" TUTTI_TIMEOUT=60 -- "${args[@]}" -C "$coll" --emulate-device 1
done
