#!/bin/bash
# What the hang and mismatch machinery costs a small call: 8-byte all-reduce
# latency with 2 ranks over shared memory, interleaved PASSES times, for
#   before  - OLD_PERF, a tutti-perf built from the commit before it (e865075)
#   default - this build (progress record, flight recorder, blocked-call check)
#   no_trace - this build with TUTTI_TRACE_CALLS=0 (no flight recorder)
#   check_calls - this build with TUTTI_CHECK_CALLS=1 (an all-gather per call)
# Prints tutti-perf's out-of-place time (us) per run.
set -euo pipefail
PERF=${PERF:-build/bench/tutti-perf}
OLD_PERF=${OLD_PERF:?a tutti-perf built from the commit before}
PASSES=${PASSES:-3}
export TUTTI_SOCKET_IFNAME=lo
latency() { "$@" -np 2 -b 8 -e 8 -n 20000 -w 2000 | awk '$1 == 8 { print $6 }'; }
for pass in $(seq "$PASSES"); do
  echo "pass $pass before $(latency "$OLD_PERF")"
  echo "pass $pass default $(latency "$PERF")"
  echo "pass $pass no_trace $(TUTTI_TRACE_CALLS=0 latency "$PERF")"
  echo "pass $pass check_calls $(TUTTI_CHECK_CALLS=1 latency "$PERF")"
done
