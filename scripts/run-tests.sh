#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
# Tests fork many ranks on 2 cores: run them one at a time.
ctest --output-on-failure --timeout 900 "$@"
