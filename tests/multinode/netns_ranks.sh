# Sourced: netns_ranks PERF PREFIX NODES RANKS_PER_NODE LOG ENV... -- ARGS...
# starts NODES x RANKS_PER_NODE tutti-perf ranks, rank r in namespace
# PREFIX-n(r % NODES) (made by netns.sh), rendezvous on node 0's data0;
# waits for all, leaves rank 0's output in LOG (every rank's in LOG.r) and
# fails when any rank failed.
netns_ranks_port=$((29000 + RANDOM % 900))
netns_ranks() {
  local perf=$1 prefix=$2 nodes=$3 per=$4 log=$5
  shift 5
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local n=$((nodes * per)) pids=() rc=0
  netns_ranks_port=$((netns_ranks_port + 1))
  for ((r = n - 1; r >= 0; r--)); do
    ip netns exec "$prefix-n$((r % nodes))" env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$((r / nodes)) \
      TUTTI_COMM_ID=10.77.0.1:$netns_ranks_port TUTTI_SOCKET_IFNAME=data "${envs[@]}" \
      "$perf" "$@" >"$log.$r" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  cp "$log.0" "$log"
  return $rc
}
