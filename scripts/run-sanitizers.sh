#!/usr/bin/env bash
# The test suite's sanitizer stage (scripts/run-tests.sh runs it after the
# main suite; `scripts/run-sanitizers.sh asan` or `tsan` runs one half).
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer over the unit tests
#         (the transport conformance suite and the reducers among them), the
#         error tests, and the collectives matrix for 2 and 3 ranks over shm
#         and sockets, with a dtype of each width (TUTTI_TEST_MATRIX=widths).
#   tsan: ThreadSanitizer over what runs threads: the executor (planner
#         tests drive it), the socket transport's helper threads (conformance
#         and the socket matrix of 3 ranks with TUTTI_SOCKET_NTHREADS=2:
#         each rank's helper threads are the same with 2; the matrix with
#         two dtypes and ops, TUTTI_TEST_MATRIX=threads, as the others
#         change no thread's work), the shm matrix of 3 ranks (the same), the
#         non-blocking communicator (CommConfig), and ranks as threads
#         (InProcess).
# Builds go to build-asan/ and build-tsan/: host code only (no CUDA, no
# torch extension, no libnccl, no benchmarks), so each builds in minutes.
# Every report fails its test; tests/tsan.supp holds the one suppression, justified.
#   scripts/run-sanitizers.sh [all|asan|tsan] [build|test]
# "build" only builds, "test" only runs (scripts/run-tests.sh builds while
# the main suite runs, then tests); neither: both.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
phase=${2:-both}
if [[ ! $which =~ ^(all|asan|tsan)$ || ! $phase =~ ^(build|test|both)$ ]]; then
  echo "usage: $0 [all|asan|tsan] [build|test]" >&2
  exit 2
fi
# hwloc's plugins (libhwloc-plugins, which Open MPI's packages pull in) leak
# at dlclose, in frames LeakSanitizer cannot name: the sanitizer runs go
# without them, as on a machine set up by install-deps.sh.
export HWLOC_PLUGINS_PATH=/nonexistent

configure() {  # build dir, sanitizers, targets to build, extra cmake args
  local dir=$1 sanitize=$2 targets=$3
  shift 3
  [[ $phase == test ]] && return 0
  # Line tables (-g1) name every frame of a report; full debug info made a
  # quarter of these builds' time.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUTTI_SANITIZE="$sanitize" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
    -DTUTTI_ENABLE_CUDA=OFF -DTUTTI_BUILD_PYTHON=OFF -DTUTTI_BUILD_NCCL_COMPAT=OFF \
    -DTUTTI_BUILD_BENCH=OFF "$@" >/dev/null
  # shellcheck disable=SC2086
  cmake --build "$dir" -j "$(nproc)" --target $targets
}

if [[ $which == all || $which == asan ]]; then
  configure build-asan address,undefined "unit_tests errors_test collectives_test"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1
  [[ $phase == build ]] || (cd build-asan &&
    ctest --output-on-failure --no-tests=error --timeout 900 -L '^(unit|errors)$' &&
    TUTTI_TEST_MATRIX=widths ctest --output-on-failure --no-tests=error --timeout 900 -R 'MatchReference/(shm|socket)_[23]ranks')
fi

if [[ $which == all || $which == tsan ]]; then
  # UCX is not built with ThreadSanitizer: its own threads and atomics would
  # be reported as races in tutti, so this build leaves the UCX transport out.
  # The error tests do not run here: their binary is not built.
  configure build-tsan thread "unit_tests collectives_test" -DTUTTI_ENABLE_UCX=OFF
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp"
  # The kernel's large mmap randomization can break ThreadSanitizer's memory
  # layout: run without address randomization.
  tsan() { setarch "$(uname -m)" -R "$@"; }
  [[ $phase == build ]] || (cd build-tsan &&
    tsan ctest --output-on-failure --no-tests=error --timeout 900 -R '(^Transports/Conformance|PlanSim\.|^Plans\.|^InProcess\.|^CommConfig\.)' &&
    TUTTI_TEST_MATRIX=threads TUTTI_SOCKET_NTHREADS=2 tsan ctest --output-on-failure --no-tests=error --timeout 900 \
      -R 'MatchReference/(socket|shm)_3ranks')
fi
