#!/usr/bin/env bash
# tutti-perf runs unchanged under every way ranks get started: -np (forked),
# -t (threads), torchrun-style, Slurm-style and PMI-style variables, and
# mpirun when Open MPI is installed; and the same on device buffers of the
# emulated device (--emulate-device). Every run checks its results.
set -euo pipefail
perf=$1
export TUTTI_SOCKET_IFNAME=lo TUTTI_TIMEOUT=60
args=(-b 8 -e 1M -f 32 -n 3 -w 1 -c 1)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

check() {  # name, then the command
  local name=$1
  shift
  if ! "$@" >"$log" 2>&1 || ! grep -q "Out of bounds values : 0 OK" "$log"; then
    echo "FAILED: $name" >&2
    cat "$log" >&2
    exit 1
  fi
  echo "ok: $name"
}

# N processes started by hand with one family of variables; $1 = N, $2 = family.
launch() {
  local n=$1 family=$2 port=$((20000 + RANDOM % 20000)) pids=() rc=0
  for ((r = 0; r < n; r++)); do
    case $family in
      torchrun) env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
                  "$perf" "${args[@]}" >"$log.$r" 2>&1 & ;;
      slurm) env SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$r TUTTI_COMM_ID=127.0.0.1:$port \
               "$perf" "${args[@]}" >"$log.$r" 2>&1 & ;;
      pmi) env PMI_RANK=$r PMI_SIZE=$n NCCL_COMM_ID=127.0.0.1:$port \
             "$perf" "${args[@]}" -C allgather >"$log.$r" 2>&1 & ;;
    esac
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  cat "$log.0" >"$log"
  for ((r = 0; r < n; r++)); do cat "$log.$r" >&2 2>/dev/null || true; rm -f "$log.$r"; done 2>/dev/null
  return $rc
}

check "forked -np 3" "$perf" "${args[@]}" -np 3
check "threads -t 3" "$perf" "${args[@]}" -t 3
check "-np 2 x -t 2, all ops and types" "$perf" -b 1K -e 64K -f 8 -n 2 -w 1 -o all -d all -np 2 -t 2
for coll in allgather broadcast reduce reducescatter sendrecv alltoall; do
  check "-np 3 -C $coll -r 1" "$perf" "${args[@]}" -np 3 -C "$coll" -r 1
done
json=$(mktemp) csv=$(mktemp)
check "--json and --csv" "$perf" "${args[@]}" -np 2 --json "$json" --csv "$csv"
# Every all-reduce row names the cost model's choice and prediction.
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["nranks"] == 2 and d["wrong"] == 0 and len(d["results"]) >= 4, d
assert all(r["algorithm"] in ("hostblock", "ring", "tree", "oneshot", "rd", "twolevel", "hd") and r["predicted_us"] > 0 for r in d["results"]), d' "$json"
grep -q '^collective,nranks,size,count,type,redop,root,placement,time_us,algbw_gbs,busbw_gbs,wrong,algorithm,channels,predicted_us$' "$csv"
test "$(wc -l <"$csv")" -ge 5
rm -f "$json" "$csv"
echo "ok: JSON and CSV files are well formed"
check "torchrun-style variables" launch 3 torchrun
emulated() {  # the run must have used device buffers
  check "$@"
  grep -q "Using device memory (emulated GPUs" "$log" || { echo "FAILED: $1 used no device memory" >&2; exit 1; }
}
emulated "--emulate-device 2: -np 2 x -t 2, all ops and types" "$perf" -b 1K -e 64K -f 8 -n 2 -w 1 -o all -d all \
  -np 2 -t 2 --emulate-device 2
for coll in allgather broadcast reduce reducescatter sendrecv alltoall; do
  emulated "--emulate-device 1: -np 3 -C $coll -r 1" "$perf" "${args[@]}" -np 3 -C "$coll" -r 1 --emulate-device 1
done
host_args=("${args[@]}")
args+=(--emulate-device 1)
emulated "--emulate-device 1 under torchrun-style variables" launch 3 torchrun
args=("${host_args[@]}")
check "Slurm-style variables" launch 2 slurm
check "PMI-style variables, NCCL_COMM_ID" launch 2 pmi
if command -v mpirun >/dev/null 2>&1; then
  check "mpirun" mpirun --allow-run-as-root --oversubscribe -np 3 -x TUTTI_SOCKET_IFNAME \
    -x TUTTI_COMM_ID=127.0.0.1:$((20000 + RANDOM % 20000)) "$perf" "${args[@]}"
else
  echo "skipped: mpirun (Open MPI is not installed)"
fi
