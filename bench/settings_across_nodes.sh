#!/usr/bin/env bash
# tutti-perf across namespace nodes (tests/multinode/netns.sh) under several
# settings, passes alternating which goes first, each rank's CPU time beside
# its time: for looking into what tutti chooses, not for comparing libraries
# (settings are TUTTI_* variables on purpose).
#
#   bench/settings_across_nodes.sh NODES PER RATE PASSES OUT.md SETTING...   (root)
#   e.g. bench/settings_across_nodes.sh 4 1 4gbit 2 /tmp/r.md \
#          "TUTTI_ALGO=allreduce:ring TUTTI_NCHANNELS=1" "TUTTI_ALGO=allreduce:hd"
#
# Each SETTING is space-separated VAR=VALUE words ("" for tutti's own
# choices). RATE shapes every node's link both ways with tbf ("none": veth
# as it is). Float32 sum all-reduce, 4, 16 and 64 MiB, 5 calls each after 3.
set -euo pipefail
nodes=${1:?nodes} per=${2:?ranks per node} rate=${3:?rate or none} passes=${4:?passes} out=${5:?output}
shift 5
here=$(cd "$(dirname "$0")/.." && pwd)
perf=$here/${BUILD_DIR:-build}/bench/tutti-perf
prefix=tutti-s
raw=$(mktemp -d /tmp/settings-across-nodes.XXXX)
source "$here/tests/multinode/netns_ranks.sh"
shaped=""
[ "$rate" != none ] && shaped=$rate
trap '$here/tests/multinode/netns.sh down $nodes $prefix >/dev/null 2>&1 || true' EXIT
"$here/tests/multinode/netns.sh" up "$nodes" $prefix $shaped >/dev/null
{
  echo "# tutti-perf under several settings, $nodes nodes x $per, links: $rate"
  echo
  echo "Made by \`bench/settings_across_nodes.sh $nodes $per $rate $passes OUT.md$(printf ' "%s"' "$@")\`"
  echo "(tutti at $(git -C "$here" rev-parse --short HEAD)) starting $(date -u +%FT%TZ) on this machine."
  echo "Ranks placed r % nodes. Each cell: out-of-place time (ms) / busbw (GB/s), the choice"
  echo "(algorithm, channels); CPU: user + system seconds of all ranks over the launch."
  echo
  echo "| pass | setting | 4 MiB | 16 MiB | 64 MiB | CPU (s) |"
  echo "| --- | --- | --- | --- | --- | --- |"
} >"$out"
for ((pass = 1; pass <= passes; pass++)); do  # not p: netns_ranks sets it
  order=("$@")
  if ((pass % 2 == 0)); then  # even passes take the settings in reverse
    order=()
    for setting in "$@"; do order=("$setting" ${order[@]+"${order[@]}"}); done
  fi
  for setting in "${order[@]}"; do
    log=$raw/p$pass.$(echo "$setting" | tr -c 'A-Za-z0-9' _)
    # shellcheck disable=SC2086
    # bash's own `time`: what each rank used, with no package beyond bash.
    netns_ranks bash "$prefix" "$nodes" "$per" "$log" $setting -- -c 'TIMEFORMAT="cpu %U %S"; time "$@"' rank \
      "$perf" -b 4M -e 64M -f 4 -n 5 -w 3 -c 0
    cells=$(awk '/^ +[0-9]/ {printf "| %.1f / %.2f, %s %s ", $6 / 1000, $8, $14, $15}' "$log")
    cpu=$(cat "$log".* | awk '/^cpu / {s += $2 + $3} END {printf "%.1f", s}')
    echo "| $pass | ${setting:-own choices} $cells| $cpu |" >>"$out"
  done
done
echo "raw outputs: $raw" >&2
