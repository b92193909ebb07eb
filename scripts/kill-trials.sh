#!/usr/bin/env bash
# The full killed-rank trials of issue 15: N trials (default 50) each over TCP
# and over shared memory, 6 ranks, a random rank killed at a random moment
# during random-size all-reduces; every survivor must name the killed rank
# within TUTTI_TIMEOUT. ctest runs 4 of each. Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
TUTTI_KILL_TRIALS=${1:-50} "${BUILD_DIR:-build}/tests/errors_test" \
  --gtest_filter='KilledRankTrials.*' 2>&1 | grep -E '^(kill trials|\[ *(OK|FAILED|PASSED) *\]|.*Failure|    Which is)'
