#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest,
# then the same tests under AddressSanitizer+UBSan and ThreadSanitizer
# (scripts/run-sanitizers.sh; TUTTI_SANITIZERS=0 skips that stage).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's minutes, last: CI's limit is 90 (the target 45).
stages=()
stage() {
  local t0=$SECONDS
  "$@"
  stages+=("$(printf '%5d s  %s' $((SECONDS - t0)) "$*")")
}
sanitizers=${TUTTI_SANITIZERS:-1}
stage scripts/install-deps.sh --debian
# The sanitizers' two builds take both cores for minutes. They start now, at
# the lowest priority, and so take only what the Python environment's
# download, the build and the suite leave idle (ranks waiting on each other,
# timeouts awaited): the suite runs as it would alone. Lowest takes two
# settings where the kernel groups processes by session (autogroups, which
# share the CPU equally whatever their processes' class: a build in a
# session of its own at the idle class alone made the main build 3x slower):
# the session's group at nice 19, and the idle class inside it.
sanitizer_build=""
if [[ $sanitizers != 0 ]]; then
  sanitizer_log=$(mktemp /tmp/tutti-sanitizer-build.XXXX)
  idle=(chrt --idle 0)
  "${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
  # A session (and so a process group) of its own: stopped whole on exit.
  # --wait: where setsid must fork (a shell with job control makes each job a
  # group leader), it stays until the builds end, so the wait below is theirs.
  setsid --wait bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec "$@"' lowest "${idle[@]}" \
    scripts/run-sanitizers.sh all build >"$sanitizer_log" 2>&1 &
  sanitizer_build=$!
  trap '[[ -n $sanitizer_build ]] && kill -- -"$sanitizer_build" 2>/dev/null; true' EXIT
fi
stage scripts/make-venv.sh
stage scripts/build.sh
# Every header and library the build read must come from a package that
# install-deps.sh installs: a fresh machine has nothing else.
stage scripts/check-deps.py "${BUILD_DIR:-build}"
# Tests fork many ranks on 2 cores: run them one at a time.
ctests() { (cd "${BUILD_DIR:-build}" && ctest --output-on-failure --timeout 900 "$@"); }
stage ctests "$@"
if [[ $sanitizers != 0 ]]; then
  # What is left of the sanitizer builds, now at full priority.
  finish_sanitizer_build() {
    echo 0 >"/proc/$sanitizer_build/autogroup" 2>/dev/null || true
    local p
    for p in $(pgrep -g "$sanitizer_build"); do
      chrt --other -p 0 "$p" 2>/dev/null || true
      renice -n 0 -p "$p" >/dev/null 2>&1 || true
    done
    local rc=0
    wait "$sanitizer_build" || rc=$?
    sanitizer_build=""
    if ((rc != 0)); then
      tail -n 60 "$sanitizer_log"
      echo "run-tests.sh: the sanitizer builds failed (rc $rc); log: $sanitizer_log" >&2
      return 1
    fi
  }
  stage finish_sanitizer_build
  stage scripts/run-sanitizers.sh all test
fi
echo "run-tests.sh: every stage passed, in $((SECONDS / 60)) min:"
printf '%s\n' "${stages[@]}"
