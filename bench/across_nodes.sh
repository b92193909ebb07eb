#!/usr/bin/env bash
# Float32 sum all-reduce across nodes, as a user benchmarks it: tutti, Open
# MPI and Gloo in one run, on nodes made of network namespaces joined by veth
# through a bridge (tests/multinode/netns.sh), several ranks per node placed
# in blocks (ranks 0..k-1 on node 0, as torchrun and mpirun place them).
#
#   bench/across_nodes.sh                    (root; writes bench/results/across_nodes*)
#   LAYOUTS="2x2 4x1 3x2" RATES="none 4gbit" PASSES=3 OUT=bench/results bench/across_nodes.sh
#
# Each layout is NODESxRANKS_PER_NODE; a rate shapes every node's link both
# ways with tbf ("none": veth as it is). In each pass the three libraries run
# one after another on the same nodes, so a shared machine's drift hits all.
# - tutti: tutti-perf per rank in its namespace with torchrun's variables
#   (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR/PORT) and
#   TUTTI_SOCKET_IFNAME=data0, nothing else: its own choices. Its cache
#   (TUTTI_CACHE_DIR: the topology probe, large calls' times kept between
#   runs) is a directory of this run's for each layout and rate: the first
#   pass starts with nothing kept, as on a new cluster;
# - Open MPI: mpirun in node 0 with a hostfile of the nodes' addresses and an
#   rsh agent that starts each node's daemon in its namespace with a hostname
#   of its own (so session and vader directories are the node's), --mca btl
#   self,vader,tcp over data0, and told that ranks outnumber cores
#   (--oversubscribe --mca mpi_yield_when_idle 1);
# - Gloo: one process per rank, a TCP pair between every two ranks;
# - tutti once more, through the peers' program (as tutti-perf, launcher
#   variables and the interface only), so its times are taken as theirs are.
# Peers: bench/peers/allreduce_ranks.cpp (../shared/peers' timing method).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
LAYOUTS=${LAYOUTS:-"2x2 4x1 3x2"}
RATES=${RATES:-"none 4gbit"}
PASSES=${PASSES:-3}
OUT=${OUT:-bench/results}
PEERS=${PEERS:-$root/../shared/peers}
prefix=tutti-x
netns=$root/tests/multinode/netns.sh
raw=${RAW:-$(mktemp -d /tmp/across-nodes.XXXX)}
mkdir -p "$OUT"

scripts/build.sh >/dev/null
perf=$root/build/bench/tutti-perf
bench/peers/build_node_peers.sh "$raw/bin" "$PEERS" >/dev/null
most_nodes=0
for l in $LAYOUTS; do [ "${l%x*}" -gt $most_nodes ] && most_nodes=${l%x*}; done

# The rsh agent Open MPI starts remote daemons with: HOST CMD... -> CMD in
# HOST's namespace (10.77.0.<i+1> is node i), under a hostname of its own.
cat >"$raw/netns_rsh" <<EOF
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1; shift
i=\$((\${host##*.} - 1))
exec ip netns exec $prefix-n\$i unshare --uts sh -c "hostname node\$i; exec \$*"
EOF
chmod +x "$raw/netns_rsh"

source bench/node_ranks.sh
# run_tutti NODES PER CSV [ENV...]
run_tutti() {
  local nodes=$1 per=$2 csv=$3
  shift 3
  node_ranks $prefix "$nodes" "$per" "$csv" TUTTI_CACHE_DIR="$cache" "$@" "$perf" -b 8 -e 64M -f 2 -n 20 -w 5
}

# run_tutti_peers NODES PER CSV: tutti through the peers' program.
run_tutti_peers() {
  local nodes=$1 per=$2 csv=$3 n=$(($1 * $2)) pids=() rc=0 r
  node_ranks_port=$((node_ranks_port + 1))
  for ((r = n - 1; r >= 0; r--)); do
    local to=/dev/null
    [ $r = 0 ] && to=$csv
    node_rank $prefix $r $n $per TUTTI_CACHE_DIR="$cache" "$raw/bin/allreduce_ranks_tutti" tcp >"$to" 2>"$csv.$r.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}

# run_openmpi NODES PER CSV
run_openmpi() {
  local nodes=$1 per=$2 csv=$3 i
  : >"$raw/hostfile"
  for ((i = 0; i < nodes; i++)); do echo "10.77.0.$((i + 1)) slots=$per" >>"$raw/hostfile"; done
  ip netns exec "$prefix-n0" unshare --uts sh -c "hostname node0; exec mpirun --allow-run-as-root \
    -np $((nodes * per)) --hostfile $raw/hostfile --map-by slot --mca plm_rsh_agent $raw/netns_rsh \
    --mca btl self,vader,tcp --mca btl_tcp_if_include data0 --mca oob_tcp_if_include data0 \
    --oversubscribe --mca mpi_yield_when_idle 1 $raw/bin/allreduce_ranks_mpi tcp" >"$csv" 2>"$csv.log"
}

# run_gloo NODES PER CSV
run_gloo() {
  local nodes=$1 per=$2 csv=$3 n=$(($1 * $2)) pids=() rc=0 r store
  store=$(mktemp -d "$raw/store.XXXX")
  for ((r = n - 1; r >= 0; r--)); do
    local node=$((r / per)) to=/dev/null
    [ $r = 0 ] && to=$csv
    ip netns exec "$prefix-n$node" "$raw/bin/allreduce_ranks_gloo" tcp $r $n "$store" "10.77.0.$((node + 1))" \
      >"$to" 2>"$csv.$r.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}

trap '$netns down $most_nodes $prefix >/dev/null 2>&1 || true' EXIT
for rate in $RATES; do
  shaped=""
  [ "$rate" != none ] && shaped=$rate
  $netns up "$most_nodes" $prefix $shaped >/dev/null
  for layout in $LAYOUTS; do
    nodes=${layout%x*} per=${layout#*x}
    cache=$raw/cache/$rate/$layout
    mkdir -p "$cache"
    for pass in $(seq 1 "$PASSES"); do
      dir=$raw/$rate/$layout/pass$pass
      mkdir -p "$dir"
      for lib in tutti openmpi gloo tutti_peers; do
        echo "== $rate $layout pass $pass: $lib" >&2
        "run_$lib" "$nodes" "$per" "$dir/$lib.csv" || echo "FAILED: $lib $rate $layout pass $pass" | tee -a "$raw/failures" >&2
      done
    done
    # Once more, logging what init measured of the links (the passes set
    # nothing but the interface; their CSVs carry the model's choices).
    echo "== $rate $layout: tutti's init" >&2
    run_tutti "$nodes" "$per" "$raw/$rate/$layout/init.csv" TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=INIT \
      || echo "FAILED: init $rate $layout" | tee -a "$raw/failures" >&2
  done
done
python3 bench/across_nodes.py "$raw" "$OUT" "$*"
echo "raw outputs: $raw" >&2
