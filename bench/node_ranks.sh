# Sourced by the benchmarks across namespace nodes (tests/multinode/netns.sh
# makes the nodes PREFIX-n0, PREFIX-n1, ...; node i answers at 10.77.0.<i+1>
# on data0). Ranks are placed in blocks, as torchrun places them: rank r of
# NODES x PER runs on node r / PER, with torchrun's variables and the
# interface set, nothing else.

node_ranks_port=$((31000 + RANDOM % 2000))

# node_rank PREFIX R N PER CMD...: CMD as rank R of N in its node; CMD may
# start with more VAR=VALUE words. Every rank of one launch must see the same
# node_ranks_port (node_ranks moves it on between launches).
node_rank() {
  local prefix=$1 r=$2 n=$3 per=$4
  shift 4
  ip netns exec "$prefix-n$((r / per))" env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$((r % per)) \
    LOCAL_WORLD_SIZE=$per MASTER_ADDR=10.77.0.1 MASTER_PORT=$node_ranks_port TUTTI_SOCKET_IFNAME=data0 "$@"
}

# node_ranks PREFIX NODES PER CSV CMD...: CMD (tutti-perf, or VAR=VALUE words
# and tutti-perf) as every rank at once, rank 0 also given `--csv CSV`; rank
# r's output in CSV.r.log. Waits for all; fails when any rank failed.
node_ranks() {
  local prefix=$1 nodes=$2 per=$3 csv=$4 n=$(($2 * $3)) r pids=() rc=0 extra
  shift 4
  node_ranks_port=$((node_ranks_port + 1))
  for ((r = n - 1; r >= 0; r--)); do
    extra=()
    [ $r = 0 ] && extra=(--csv "$csv")
    node_rank "$prefix" $r $n $per "$@" "${extra[@]}" >"$csv.$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}
