#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest,
# then the same tests under AddressSanitizer+UBSan and ThreadSanitizer
# (scripts/run-sanitizers.sh; TUTTI_SANITIZERS=0 skips that stage).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# Every header and library the build read must come from a package that
# install-deps.sh installs: a fresh machine has nothing else.
scripts/check-deps.py "${BUILD_DIR:-build}"
# Tests fork many ranks on 2 cores: run them one at a time.
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure --timeout 900 "$@")
if [[ ${TUTTI_SANITIZERS:-1} != 0 ]]; then
  scripts/run-sanitizers.sh
fi
