#!/usr/bin/env bash
# What the device path costs over the network: all-reduce between network
# namespace nodes (tests/multinode/netns.sh) on host buffers and on device
# buffers of the emulated device (tutti-perf --emulate-device), alternated so
# both see the same machine, for 2 nodes x 1 rank and 2 nodes x 2 ranks
# (P2P inside a node), on unshaped veth links and on links shaped to RATE.
#
#   bench/device_path_bench.sh BUILD_DIR OUT.md [RATE] [TRIALS]   (root; RATE default 1gbit)
#
# The emulated device's kernels are CPU copies on the same 2 cores as the
# veth "network", so unshaped links show the extra copies at full weight; a
# shaped link is the regime of real hardware, where kernels are far faster
# than the NIC.
set -euo pipefail
build=${1:?build dir}
out=${2:?output file}
rate=${3:-1gbit}
trials=${4:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
perf=$build/bench/tutti-perf
netns=$here/tests/multinode/netns.sh
source "$here/tests/multinode/netns_ranks.sh"
raw=$(mktemp -d)
trap 'rm -rf "$raw"; $netns down 2 tutti-d >/dev/null; $netns down 2 tutti-s >/dev/null' EXIT
args=(-b 4M -e 64M -f 4 -n 10 -w 3 -c 1)

$netns up 2 tutti-d >/dev/null
$netns up 2 tutti-s "$rate" >/dev/null

# measure PREFIX PER_NODE MEMORY TRIAL: rank 0's table into $raw
measure() {
  local prefix=$1 per=$2 memory=$3 trial=$4 extra=()
  [ "$memory" = device ] && extra=(--emulate-device 1)
  netns_ranks "$perf" "$prefix" 2 "$per" "$raw/$prefix.$per.$memory.$trial" TUTTI_TIMEOUT=120 -- \
    "${args[@]}" "${extra[@]}"
}

{
  echo "# Device buffers over the network: emulated device vs host buffers"
  echo
  echo "Made by \`bench/device_path_bench.sh $build $out $rate $trials\` on $(date -u +%F), $(nproc) cores."
  echo "All-reduce (float, sum), out-of-place and in-place busbw in GB/s, the best of $trials alternated"
  echo "runs each; ratio = device / host. Every result was checked (tutti-perf -c 1)."
} >"$out"

for prefix in tutti-d tutti-s; do
  for per in 1 2; do
    for ((t = 0; t < trials; t++)); do
      measure $prefix $per host $t
      measure $prefix $per device $t
    done
    link=$([ $prefix = tutti-d ] && echo "unshaped veth" || echo "shaped to $rate each way")
    printf '\n### 2 nodes x %d rank(s), %s\n\n' "$per" "$link" >>"$out"
    python3 - "$raw" "$prefix.$per" "$trials" >>"$out" <<'PY'
import sys
raw, key, trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
def best(memory):
    rows = {}
    for t in range(trials):
        for line in open(f"{raw}/{key}.{memory}.{t}"):
            f = line.split()
            if len(f) == 13 and f[0].isdigit():
                size = int(f[0])
                o, i = float(f[7]), float(f[11])
                po, pi = rows.get(size, (0, 0))
                rows[size] = (max(po, o), max(pi, i))
    return rows
h, d = best("host"), best("device")
print("| bytes | host oop | device oop | ratio | host in-place | device in-place | ratio |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for size in sorted(h):
    (ho, hi), (do, di) = h[size], d[size]
    print(f"| {size} | {ho:.2f} | {do:.2f} | {do/ho:.0%} | {hi:.2f} | {di:.2f} | {di/hi:.0%} |")
PY
  done
done
echo "written: $out"
