#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# Every header and library the build read must come from a package that
# install-deps.sh installs: a fresh machine has nothing else.
scripts/check-deps.py "${BUILD_DIR:-build}"
cd "${BUILD_DIR:-build}"
# Tests fork many ranks on 2 cores: run them one at a time.
ctest --output-on-failure --timeout 900 "$@"
