#!/bin/sh
# Runs a script under torchrun on NODES namespace nodes (tests/multinode/netns.sh
# PREFIX-n0..), NPROCS processes each: one torchrun per node, node 0's data0
# hosting the rendezvous; tutti and gloo talk over data0 only. Skips (77)
# where the nodes are not up.
# usage: run_torchrun_nodes.sh PYTHON NODES NPROCS SCRIPT [PREFIX]
set -u
python=$1 nodes=$2 nprocs=$3 script=$4 prefix=${5:-tutti-t}
for i in $(seq 0 $((nodes - 1))); do
  ip netns exec "$prefix-n$i" true 2>/dev/null || { echo "SKIP: node $prefix-n$i is not up"; exit 77; }
done
port=$((29500 + $$ % 400))
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=""
for i in $(seq 0 $((nodes - 1))); do
  ip netns exec "$prefix-n$i" env TUTTI_SOCKET_IFNAME=data0 GLOO_SOCKET_IFNAME=data0 TUTTI_TIMEOUT=120 \
    OMP_NUM_THREADS=1 "$python" -m torch.distributed.run --nnodes="$nodes" --node_rank="$i" \
    --nproc_per_node="$nprocs" --master_addr=10.77.0.1 --master_port="$port" \
    --redirects=2 --tee=2 "$script" >"$logs/$i" 2>&1 &
  pids="$pids $!"
done
rc=0
for p in $pids; do wait "$p" || rc=1; done
for i in $(seq 0 $((nodes - 1))); do sed "s/^/[node $i] /" "$logs/$i"; done
exit $rc
