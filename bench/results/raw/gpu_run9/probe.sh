#!/usr/bin/env bash
# GPU run 9, call 2 (2026-12-04): probes for what call 1 found, then the
# check's remaining steps. Run on the GPU machine from the checkout's root
# with .device/stage and .device/debs carried; writes under $1.
#   torch2: rank 0 died of SIGSEGV inside an ostream insert in
#     ProcessGroupTutti::ensureOpen (the extension is built there by
#     /opt/gcc's g++): is the compiler's libstdc++ the one that runs?
#   racecheck/memcheck: "Could not find CUDA Debugger back-end", then a
#     SIGSEGV with the PC on the stack at the first collective: which part
#     of a device call does the sanitizer fall over?
set -uo pipefail
out=${1:?usage: probe.sh OUTDIR}; mkdir -p "$out"
root=$(pwd) stage=$root/.device/stage
eval "$(bash scripts/gpu/sysroot.sh .device/debs)"
export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH=$stage:$stage/nccl:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TUTTI_SOCKET_IFNAME=lo

{
  echo "## toolchain"
  command -v g++ c++ cc gcc; echo "CXX=${CXX:-} CC=${CC:-}"
  for c in /opt/gcc/bin/g++ /usr/bin/g++; do [ -x $c ] && { $c --version | head -1; echo "$c libstdc++: $($c -print-file-name=libstdc++.so.6)"; }; done
  ls -l /usr/lib/x86_64-linux-gnu/libstdc++.so.6* /opt/gcc/lib64/libstdc++.so.6* 2>&1
  python3 -c 'import torch, re; print(sorted({l.split()[-1] for l in open("/proc/self/maps") if "libstdc++" in l}))'
  printf '#include <sstream>\n#include <cstdio>\nint main(){std::ostringstream s; s << "rank " << 42 << 7L; std::puts(s.str().c_str());}\n' >/tmp/os.cpp
  /opt/gcc/bin/g++ -std=c++20 -O2 /tmp/os.cpp -o /tmp/os && { /tmp/os; echo "plain rc $?"; }
} >"$out/toolchain.txt" 2>&1

san() {  # san NAME FILTER [ENV...]: memcheck over FILTER, 25 s at most
  local name=$1 filter=$2; shift 2
  echo "## $name: $* memcheck $filter" >"$out/san-$name.log"
  timeout -s KILL 25 env TUTTI_TEST_IN_PROCESS=1 "$@" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$stage/tests/gpu_test" --gtest_filter="$filter" >>"$out/san-$name.log" 2>&1
  echo "rc $?" >>"$out/san-$name.log"
}
san worker 'Cudas/CudaRules.TheWorkerRunsQueuedOpsInOrderBitForBit/gpu'
san gate 'Cudas/CudaRules.WhatWaitsForAStreamHeldByAGate/gpu'
san logged 'GpuSanitized.*AsThreadsOfThisProcess' TUTTI_DEBUG=TRACE TUTTI_DEBUG_SUBSYS=ALL TUTTI_DEBUG_FILE="$out/san-logged-%p.tutti.log"
san noucx 'GpuSanitized.*AsThreadsOfThisProcess' UCX_HANDLE_ERRORS=none UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=no

TUTTI_GPU_CHECK_SECONDS=${CHECK_SECONDS:-230} scripts/gpu/check.sh /tmp/gc faults nccl-tests torch2 perf-ranks
rc=$?
# torch2 again with the compiler's own libstdc++ first, if it failed.
if grep -q 'torch2 *FAIL' /tmp/gc/summary.txt 2>/dev/null; then
  pre=$(/opt/gcc/bin/g++ -print-file-name=libstdc++.so.6)
  timeout -s KILL 40 env LD_PRELOAD="$pre" PYTHONPATH=/tmp/gc/torch-build/lib TUTTI_TEST_INIT=device-id-cuda \
    TUTTI_TEST_TIMEOUT=30 tests/python/run_torchrun.sh python3 2 tests/python/torch2_test.py >"$out/torch2-preloaded.log" 2>&1
  echo "rc $?" >>"$out/torch2-preloaded.log"
fi
cp /tmp/gc/*.log /tmp/gc/summary.txt /tmp/gc/perf-*.json "$out/" 2>/dev/null
exit $rc
