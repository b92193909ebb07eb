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
stage scripts/install-deps.sh
stage scripts/build.sh
# Every header and library the build read must come from a package that
# install-deps.sh installs: a fresh machine has nothing else.
stage scripts/check-deps.py "${BUILD_DIR:-build}"
# Tests fork many ranks on 2 cores: run them one at a time.
ctests() { (cd "${BUILD_DIR:-build}" && ctest --output-on-failure --timeout 900 "$@"); }
stage ctests "$@"
if [[ ${TUTTI_SANITIZERS:-1} != 0 ]]; then
  stage scripts/run-sanitizers.sh
fi
echo "run-tests.sh: every stage passed, in $((SECONDS / 60)) min:"
printf '%s\n' "${stages[@]}"
