#!/usr/bin/env bash
# The GPU check, in one run of at most 8 minutes: every step below, its log
# and data under OUTDIR, and a short table last. On a machine without a GPU
# it runs what needs none (the sm_90 build is present, the emulated-device
# tests, its own argument checks) and lists each GPU step as skipped, so the
# script is tried before a GPU is lent. docs/gpu-check.md says how to call it.
#
#   scripts/gpu/check.sh OUTDIR [STEP...]     (STEP: run only the steps named)
#
# What it runs comes from .device/stage (scripts/gpu/prepare.sh makes it);
# libraries the machine lacks come from .device/debs, unpacked under
# /opt/tutti-sysroot, never into /.
set -uo pipefail
usage() { echo "usage: $0 OUTDIR [STEP...]   (steps: $ALL_STEPS)" >&2; exit 2; }
ALL_STEPS="build-sm90 env kernels torch-calls collectives collectives-8-mps threads faults nccl-tests torch torch2 racecheck kernel-bandwidth memcheck perf perf-mps lean-worker perf-ranks perf-two-nodes emulated"
[ $# -ge 1 ] || usage
case $1 in -*) usage ;; esac
out=$1; shift
only=" $* "
for s in "$@"; do [[ " $ALL_STEPS " == *" $s "* ]] || { echo "unknown step: $s" >&2; usage; }; done
mkdir -p "$out" || { echo "cannot make $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=${TUTTI_GPU_STAGE:-$root/.device/stage}
start=$SECONDS
budget=${TUTTI_GPU_CHECK_SECONDS:-450}
table=()

wanted() { [ "$only" = "  " ] || [[ $only == *" $1 "* ]]; }
record() { table+=("$(printf '%-17s %-7s %5s s  %s' "$1" "$2" "$3" "$4")"); }
# step NAME LIMIT CMD...: runs CMD with a time limit, its output in NAME.log.
step() {
  local name=$1 limit=$2; shift 2
  wanted "$name" || return 0
  # Every step ends by the deadline: a late step gets what is left, or is skipped.
  local left=$((budget - (SECONDS - start)))
  if [ $left -lt 15 ]; then record "$name" skip 0 "out of time (TUTTI_GPU_CHECK_SECONDS=$budget)"; return 0; fi
  [ $limit -gt $left ] && limit=$left
  local t0=$SECONDS rc
  echo "== $name (limit ${limit} s)" >&2
  # A function of this script runs in a bash of its own (with the others,
  # and its arguments), under the limit.
  if declare -F "$1" >/dev/null; then set -- bash -c "$(declare -f); \"\$0\" \"\$@\"" "$@"; fi
  # In a session of its own: a step still running near its limit has every
  # thread's stack of each of its processes taken, then the session ends.
  setsid "$@" >"$out/$name.log" 2>&1 &
  local pid=$! stop=$((limit > 20 ? limit - 12 : limit))
  while kill -0 $pid 2>/dev/null && [ $((SECONDS - t0)) -lt $stop ]; do sleep 0.2; done
  if kill -0 $pid 2>/dev/null; then
    stacks_of "$pid" "$name"
    kill -TERM -- -$pid 2>/dev/null; sleep 1; kill -KILL -- -$pid 2>/dev/null
    wait $pid; rc=124
  else
    wait $pid; rc=$?
  fi
  local status=pass
  [ $rc -eq 0 ] || status=FAIL
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && status=TIMEOUT
  # A GPU test that skips on a GPU machine did not run: that is a failure.
  [ $gpu = 1 ] && grep -q '^\[  SKIPPED \]' "$out/$name.log" && status=FAIL
  record "$name" "$status" $((SECONDS - t0)) "$(summary_of "$name" $rc)"
  tail -n 3 "$out/$name.log" >&2
}
skip() { wanted "$1" && record "$1" skip 0 "$2"; return 0; }
# stacks_of SESSION NAME: each process's threads (cuda-gdb; the GPU machine
# has no gdb), into NAME.stacks.PID.txt, all at once, 10 s at most.
stacks_of() {
  command -v cuda-gdb >/dev/null || return 0
  local p gdbs=()
  for p in $(pgrep -s "$1"); do
    timeout 10 cuda-gdb -q -batch -p "$p" -ex 'thread apply all bt 25' >"$out/$2.stacks.$p.txt" 2>&1 &
    gdbs+=($!)
  done
  [ ${#gdbs[@]} -eq 0 ] || wait "${gdbs[@]}"
}
# A line for the table: gtest's count, nccl-tests' wrong count, or the last line.
summary_of() {
  local log=$out/$1.log
  if grep -q '^\[  PASSED  \]\|^\[  FAILED  \]' "$log"; then
    grep -h '^\[  PASSED  \]\|tests, listed below' "$log" | tr '\n' ' ' | cut -c1-70
  elif grep -q 'Out of bounds values' "$log"; then
    grep -h 'Out of bounds values' "$log" | sort | uniq -c | tr -s ' ' | tr '\n' ';' | cut -c1-70
  else
    tail -n 1 "$log" | cut -c1-70
  fi
}

# Runs its arguments under an MPS daemon of its own (pipe and log under
# OUTDIR), told to quit after: rank processes sharing the GPU take turns on
# it (time slices) while each one's worker kernel waits resident for its
# peers; under MPS their kernels run side by side. The GPU's settings stay.
under_mps() {
  export CUDA_MPS_PIPE_DIRECTORY=$out/mps/pipe CUDA_MPS_LOG_DIRECTORY=$out/mps/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || return 1
  local rc=0
  "$@" || rc=$?
  echo quit | nvidia-cuda-mps-control
  return $rc
}
# A daemon left by a step cut at its limit is told to quit at the end.
quit_mps() {
  [ -S "$out/mps/pipe/control" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$out/mps/pipe timeout 10 nvidia-cuda-mps-control
  return 0
}

export PATH=$PATH:/usr/local/cuda/bin
gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then gpu=1; fi
why_skip="no GPU here (nvidia-smi lists none)"

# Libraries this machine lacks, from the carried .debs.
mpirun=$(command -v mpirun || true)
if [ $gpu = 1 ] && [ -d "$root/.device/debs" ]; then
  eval "$(bash "$root/scripts/gpu/sysroot.sh" "$root/.device/debs")"
  mpirun=$OPAL_PREFIX/bin/mpirun.openmpi  # the Open MPI nccl-tests was built with
fi
export LD_LIBRARY_PATH=$stage:$stage/nccl:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TUTTI_SOCKET_IFNAME=lo
tests=$stage/tests bench=$stage/bench
export out root stage tests bench mpirun

if [ ! -x "$tests/gpu_test" ]; then
  echo "no staged build in $stage: run scripts/gpu/prepare.sh first" >&2
  exit 2
fi
# The kernels were built for Hopper (cuobjdump where CUDA ships it; else the
# fat binary's architecture name).
if command -v cuobjdump >/dev/null; then
  step build-sm90 20 bash -c "cuobjdump --list-elf '$tests/gpu_test' | grep -q sm_90 && echo 'gpu_test holds sm_90 code'"
else
  step build-sm90 20 bash -c "grep -aq 'sm_90' '$tests/gpu_test' && echo 'gpu_test names sm_90 (no cuobjdump here)'"
fi

# The PyTorch backend compiles on the CPUs while the GPU steps run: it is
# built against the torch installed here, which this machine alone has.
torch_build=""
if [ $gpu = 1 ] && { wanted torch || wanted torch2; } && python3 -c 'import torch; assert torch.version.cuda' 2>/dev/null; then
  export torch_build=$out/torch-build
  mkdir -p "$torch_build"
  # The system's compilers: the image's CXX (/opt/gcc/bin/g++, a wrapper;
  # CC beside it) built an extension holding libstdc++'s own stream code
  # beside the shared libstdc++ PyTorch loads, and its first TORCH_CHECK
  # message crashed in an ostream insert (H200 run 9).
  (cd "$root/python" && CXX=$(command -v g++ || echo "${CXX:-c++}") CC=$(command -v gcc || echo "${CC:-cc}") \
     TUTTI_BUILD_DIR=$stage MAX_JOBS=8 timeout 300 python3 setup.py -q build \
     --build-base "$torch_build/tmp" --build-lib "$torch_build/lib" >"$out/torch-build.log" 2>&1;
   echo "exit $?" >>"$out/torch-build.log") &
  torch_pid=$!
fi

if [ $gpu = 1 ]; then
  step env 30 bash -c 'nvidia-smi; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv;
    nvcc --version | tail -1; python3 -c "import torch; print(\"torch\", torch.__version__, torch.version.cuda)" || true'
  # The paths the emulator's strictness is about come first: kernels right
  # after other CUDA calls, gates, several communicators in one process.
  step kernels 100 "$tests/gpu_test" --gtest_filter='CudaKernels.*:*CudaRules.*:GpuContexts.*'
  # In place on the legacy default stream and on a side stream, as PyTorch calls.
  step torch-calls 40 "$tests/gpu_test" --gtest_filter='GpuAsTorchCalls.*'
  step collectives 100 "$tests/gpu_test" --gtest_filter='Ranks/GpuCollectives.*-*8ranks*'
  # 8 rank processes taking turns on the GPU ran past the limit (run 7):
  # under MPS their workers run side by side.
  if command -v nvidia-cuda-mps-control >/dev/null; then
    step collectives-8-mps 100 under_mps "$tests/gpu_test" --gtest_filter='Ranks/GpuCollectives.*8ranks*'
  else
    skip collectives-8-mps "nvidia-cuda-mps-control not on the PATH"
  fi
  step threads 130 "$tests/gpu_test" --gtest_filter='Threads/GpuCollectivesAsThreads.*'
  step faults 60 env TUTTI_TEST_REAL_GPU=1 "$tests/errors_test" \
    --gtest_filter='Victims/KilledOnDevice.*:DeviceFaults.*'
  # NVIDIA's clients on tutti's libnccl.so.2: every rank on device 0.
  if [ -x "$stage/nccl-tests/all_reduce_perf" ] && [ -x "$mpirun" ]; then
    nccl_tests() {
      local t n
      for n in 1 2 4; do
        for t in all_reduce all_gather broadcast reduce_scatter; do
          echo "## ${t}_perf, $n ranks"
          "$mpirun" --allow-run-as-root --oversubscribe -np $n --bind-to none -x LD_LIBRARY_PATH \
            -x NCCL_TESTS_DEVICE=0 -x TUTTI_SOCKET_IFNAME=lo -x OPAL_PREFIX \
            "$stage/nccl-tests/${t}_perf" -b 8 -e 64M -f 8 -g 1 -c 1 -n 5 -w 2 || echo "FAILED: $t $n"
        done
      done
      ! grep -q 'FAILED' "$out/nccl-tests.log" && ! grep -q 'Out of bounds values : [1-9]' "$out/nccl-tests.log"
    }
    step nccl-tests 60 nccl_tests
  else
    skip nccl-tests "no nccl-tests in $stage/nccl-tests, or no mpirun"
  fi
  if wanted torch; then
    if [ -n "$torch_build" ]; then
      wait "$torch_pid"
      torch_runs() {
        # Every thread's stack of each rank (not torchrun's agent) still
        # running after $2 s, all at once (cuda-gdb; gdb is not there), then
        # the run is ended.
        stacks_after() {
          local b=$1 pid gdbs=()
          sleep "$2"
          for pid in $(pgrep -f "gpu_ddp.py $b "); do
            grep -qa torch.distributed.run /proc/$pid/cmdline && continue
            timeout 10 cuda-gdb -q -batch -p "$pid" -ex 'thread apply all bt 25' >"$out/torch-$b.stacks.$pid.txt" 2>&1 &
            gdbs+=($!)
          done
          [ ${#gdbs[@]} -eq 0 ] || wait "${gdbs[@]}"
          pkill -f "gpu_ddp.py $b "
        }
        local port=29611 b
        for b in gloo nccl tutti; do
          local pre=() path="" watch
          [ $b = nccl ] && pre=(env LD_PRELOAD="$stage/nccl/libnccl.so.2")
          [ $b = tutti ] && path=$torch_build/lib
          echo "## $b"
          stacks_after $b 30 & watch=$!
          # Each rank's output in the log (--tee 3), tutti's log per rank,
          # a hang named by tutti within 15 s, and Python's stacks after 25 s.
          PYTHONPATH=$path${PYTHONPATH:+:$PYTHONPATH} TUTTI_TIMEOUT=15 GPU_DDP_STACKS_AFTER=25 PYTHONUNBUFFERED=1 \
            TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=INIT,COLL,P2P,TUNING TUTTI_DEBUG_FILE="$out/tutti-$b-%p.log" \
            "${pre[@]}" python3 -m torch.distributed.run --tee 3 \
            --nproc_per_node 2 --master_port $((port++)) "$root/tests/python/gpu_ddp.py" $b "$out/ddp-$b.json" ||
            echo "FAILED: $b"
          kill $watch 2>/dev/null
        done
        python3 "$root/tests/python/compare_runs.py" "$out/ddp-gloo.json" "$out/ddp-nccl.json" 1e-6 &&
          python3 "$root/tests/python/compare_runs.py" "$out/ddp-gloo.json" "$out/ddp-tutti.json" 1e-6
      }
      step torch 100 torch_runs
    else
      skip torch "python3 has no CUDA build of torch"
    fi
  fi
  # The 2.x surface with the GPU bound at init (device_id): new_group and
  # split_group after an eager init, abort, shutdown, a CUDA all-reduce.
  if wanted torch2; then
    if [ -n "$torch_build" ]; then
      wait "$torch_pid" 2>/dev/null
      step torch2 60 env PYTHONPATH="$torch_build/lib" TUTTI_TEST_INIT=device-id-cuda TUTTI_TEST_TIMEOUT=30 \
        "$root/tests/python/run_torchrun.sh" python3 2 "$root/tests/python/torch2_test.py"
    else
      skip torch2 "python3 has no CUDA build of torch"
    fi
  fi
  # In the sanitized process itself (its forked children crashed at once,
  # run 8): the kernels, the worker alone, and every collective on one rank.
  # Two ranks' workers made no progress under the sanitizer (run 9).
  if command -v compute-sanitizer >/dev/null; then
    local_sanitized='CudaKernels.DivideAndCopy:Cudas/CudaRules.TheWorkerRunsQueuedOpsInOrderBitForBit/gpu:GpuSanitized.*OnOneRankInThisProcess'
    step racecheck 90 env TUTTI_TEST_IN_PROCESS=1 compute-sanitizer --tool racecheck --error-exitcode 9 \
      "$tests/gpu_test" --gtest_filter="$local_sanitized"
    step memcheck 90 env TUTTI_TEST_IN_PROCESS=1 compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$tests/gpu_test" --gtest_filter="$local_sanitized"
  else
    skip memcheck "compute-sanitizer not on the PATH"
    skip racecheck "compute-sanitizer not on the PATH"
  fi
  step kernel-bandwidth 45 "$bench/cuda-kernels-bench" --benchmark_min_time=0.2 \
    --benchmark_filter='float32_sum|bfloat16_sum|copyKernel|worker' --benchmark_out="$out/kernels.json"
  # tutti-perf on device buffers on the one GPU: all-reduce with 4 ranks as
  # processes (the target's case, to 1 GiB) and as threads of one process
  # (one context: no time-slicing between processes).
  perf_allreduce() {
    echo "## allreduce, 4 ranks"
    "$bench/tutti-perf" -G 1 -np 4 -C allreduce -b 8 -e 1G -f 8 -n 3 -w 1 -c 1 \
      --json "$out/perf-allreduce-4.json" || echo "FAILED: allreduce 4 ranks"
    echo "## allreduce, 4 ranks as threads"
    "$bench/tutti-perf" -G 1 -t 4 -C allreduce -b 8 -e 1G -f 8 -n 3 -w 1 -c 1 \
      --json "$out/perf-allreduce-4threads.json" || echo "FAILED: allreduce 4 threads"
    ! grep -q FAILED "$out/perf.log"
  }
  step perf 90 perf_allreduce
  # All-reduce with 2 and 4 rank processes under MPS (under_mps says why).
  perf_mps() {
    local n rc=0
    for n in 2 4; do
      echo "## allreduce, $n ranks under MPS"
      "$bench/tutti-perf" -G 1 -np $n -C allreduce -b 8 -e 256M -f 8 -n 3 -w 1 -c 1 \
        --json "$out/perf-mps-allreduce-$n.json" || { echo "FAILED: allreduce $n ranks under MPS"; rc=1; }
    done
    return $rc
  }
  if command -v nvidia-cuda-mps-control >/dev/null; then
    step perf-mps 60 under_mps perf_mps
  else
    skip perf-mps "nvidia-cuda-mps-control not on the PATH"
  fi
  # The worker's one-reader variant (TUTTI_DEVICE_WORKER=lean): the 2- and
  # 4-rank collectives for its results, then perf-mps's 4-rank all-reduce for
  # its speed, to decide whether it becomes the default (gpu.md). Then both
  # workers with 16 MiB device slots (TUTTI_P2P_BUFFSIZE of 128 MiB, 4x the
  # default): a large call makes a quarter as many ops, and run 9 put the
  # time in the worker's cost an op; to decide the default slot size too.
  lean_worker() {
    local rc=0 w
    echo "## collectives, 2 and 4 ranks, lean worker"
    TUTTI_DEVICE_WORKER=lean "$tests/gpu_test" --gtest_filter='Ranks/GpuCollectives.*-*8ranks*' || rc=1
    echo "## allreduce, 4 ranks under MPS, lean worker"
    TUTTI_DEVICE_WORKER=lean "$bench/tutti-perf" -G 1 -np 4 -C allreduce -b 8 -e 256M -f 8 -n 3 -w 1 -c 1 \
      --json "$out/perf-mps-lean-allreduce-4.json" || { echo "FAILED: allreduce 4 ranks, lean worker"; rc=1; }
    for w in grid lean; do
      echo "## allreduce, 4 ranks under MPS, $w worker, 16 MiB device slots"
      TUTTI_DEVICE_WORKER=$w TUTTI_P2P_BUFFSIZE=134217728 "$bench/tutti-perf" -G 1 -np 4 -C allreduce \
        -b 2M -e 256M -f 4 -n 3 -w 1 -c 1 --json "$out/perf-mps-$w-slots16m-allreduce-4.json" ||
        { echo "FAILED: allreduce 4 ranks, $w worker, 16 MiB slots"; rc=1; }
    done
    return $rc
  }
  if command -v nvidia-cuda-mps-control >/dev/null; then
    step lean-worker 150 under_mps lean_worker
  else
    skip lean-worker "nvidia-cuda-mps-control not on the PATH"
  fi
  # The other collectives and rank counts, to 256 MiB (checking 1 GiB on the
  # host is slow): a step of its own, so a GPU's minutes can go to it alone.
  perf_ranks() {
    local n c
    for n in 2 8 4; do
      for c in allreduce allgather reducescatter broadcast; do
        [ $n = 4 ] && [ $c = allreduce ] && continue
        echo "## $c, $n ranks"
        "$bench/tutti-perf" -G 1 -np $n -C $c -b 8 -e 256M -f 8 -n 3 -w 1 -c 1 \
          --json "$out/perf-$c-$n.json" || echo "FAILED: $c $n ranks"
      done
    done
    ! grep -q FAILED "$out/perf-ranks.log"
  }
  step perf-ranks 120 perf_ranks
  # Two pretend nodes of 2 ranks (TUTTI_HOSTID): the network path carries device chunks.
  two_nodes() {
    local r pids=() rc=0
    for r in 0 1 2 3; do
      RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 TUTTI_HOSTID=node$((r / 2)) \
        "$bench/tutti-perf" -G 1 -C allreduce -b 8 -e 256M -f 8 -n 5 -w 2 -c 1 \
        $([ $r = 0 ] && echo --json "$out/perf-two-nodes.json") >"$out/perf-two-nodes.rank$r" 2>&1 &
      pids+=($!)
    done
    for r in "${pids[@]}"; do wait "$r" || rc=1; done
    cat "$out/perf-two-nodes.rank0"
    return $rc
  }
  step perf-two-nodes 30 two_nodes
else
  for s in $ALL_STEPS; do
    case $s in build-sm90 | emulated) ;;  # need no GPU: run above and below
      *) skip $s "$why_skip" ;;
    esac
  done
fi

# The emulated device's tests (no GPU needed); on a GPU machine they are
# left to CI, where they always run.
if [ $gpu = 0 ]; then
  build=${BUILD_DIR:-$root/build-gpu}
  if [ -x "$build/tests/device_buffers_test" ]; then
    step emulated 400 bash -c "'$build/tests/device_buffers_test' && '$build/tests/errors_test' --gtest_filter='*Device*'"
  else
    skip emulated "no $build/tests/device_buffers_test"
  fi
fi

[ $gpu = 1 ] && quit_mps
echo
echo "GPU check, $(date -u +%FT%TZ), $((SECONDS - start)) s, GPU: $([ $gpu = 1 ] && nvidia-smi --query-gpu=name --format=csv,noheader | head -1 || echo none)"
printf '%-17s %-7s %7s  %s\n' step status time note
printf '%s\n' "${table[@]}" | tee "$out/summary.txt"
! printf '%s\n' "${table[@]}" | grep -q 'FAIL\|TIMEOUT'
