#!/usr/bin/env bash
# Is the device all-reduce within one node over P2P no slower than before
# the one-data-path change? Builds bench/before_after/device_allreduce.cpp
# against commit BEFORE (default ed61192, the last commit with the old
# DeviceDirect path) and AFTER (default HEAD), each in a git worktree with
# today's emulated device compiled in (the old tree's runtime interface lacks
# only registerHost; the device's kernels are today's CPU reduction table), and runs them alternately, TRIALS times per size.
#   bench/before_after/p2p.sh OUT.md [TRIALS] [BEFORE] [AFTER]
set -euo pipefail
out=${1:?usage: p2p.sh OUT.md [TRIALS] [BEFORE] [AFTER]}
trials=${2:-5}
before=${3:-ed61192}
after=${4:-HEAD}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
work=${KEEP:-$(mktemp -d /tmp/tutti-ab.XXXXXX)}
[ -n "${KEEP:-}" ] || trap 'git -C "$repo" worktree remove --force "$work/before" 2>/dev/null || true;
      git -C "$repo" worktree remove --force "$work/after" 2>/dev/null || true; rm -rf "$work"' EXIT

build() {  # build NAME COMMIT
  local tree=$work/$1
  git -C "$repo" worktree add -q --detach "$tree" "$2"
  cp "$repo/bench/before_after/device_allreduce.cpp" "$tree/ab_driver.cpp"
  if [ ! -f "$tree/src/device/emulated_device.cpp" ]; then
    cp "$repo/src/device/emulated_device.h" "$repo/src/device/emulated_device.cpp" "$tree/src/device/"
    # and the host kernels' table it reduces with
    cp "$repo/kernels/cpu/host_reducer.cpp" "$repo/kernels/cpu/reduce_table.h" "$tree/kernels/cpu/"
    sed -i -E 's/(registerHost|unregisterHost)(\(.*\)) override;/\1\2;/' "$tree/src/device/emulated_device.h"
    echo 'target_sources(tutti_static PRIVATE src/device/emulated_device.cpp)' >> "$tree/CMakeLists.txt"
  fi
  echo 'add_executable(ab_driver ab_driver.cpp)
target_link_libraries(ab_driver PRIVATE tutti_static)' >> "$tree/CMakeLists.txt"
  cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUTTI_BUILD_TESTS=OFF \
    -DTUTTI_BUILD_PYTHON=OFF > "$work/$1.cmake.log" 2>&1 || { tail -20 "$work/$1.cmake.log"; exit 1; }
  ninja -C "$tree/build" ab_driver > "$work/$1.build.log" 2>&1 || { grep -A5 -m3 error "$work/$1.build.log"; exit 1; }
}
build before "$before"
build after "$after"

{
  echo "# Device all-reduce over P2P, one node: before and after the one-data-path change"
  echo
  echo "Command: \`bench/before_after/p2p.sh $out $trials $before $after\`"
  echo "before = $(git -C "$repo" rev-parse --short "$before"), after = $(git -C "$repo" rev-parse --short "$after");"
  echo "$(nproc) cores, $(date -u +%Y-%m-%d). Emulated device (the same runtime in both), float32 sum,"
  echo "forked ranks on one node; each cell is the median of $trials alternating runs, us per call."
  echo
  echo "| ranks | bytes | before us | after us | after / before time |"
  echo "|---|---|---|---|---|"
} > "$out"
for ranks in 2 4; do
  for bytes in 65536 1048576 4194304 16777216 67108864; do
    iters=$(( bytes >= 16777216 ? 5 : 20 ))
    b=() a=()
    for t in $(seq "$trials"); do
      b+=("$("$work/before/build/ab_driver" "$ranks" "$bytes" "$iters" | awk '{print $3}')")
      a+=("$("$work/after/build/ab_driver" "$ranks" "$bytes" "$iters" | awk '{print $3}')")
    done
    mb=$(printf '%s\n' "${b[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    ma=$(printf '%s\n' "${a[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    echo "| $ranks | $bytes | $mb | $ma | $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", a / b}') |" | tee -a "$out"
  done
done
