#!/bin/sh
# PyTorch's _DistTestBase on gloo and on tutti, with N processes, in one run:
# prints both counts and every test gloo passes that tutti does not, and
# fails if there is one beyond those PyTorch itself keeps to gloo.
#   compare_suite.sh PYTHON NPROCS [OUTDIR] [-k NAME ...]
set -e
python=$1 n=$2 out=${3:-$(mktemp -d)}
shift 3 2>/dev/null || shift $#
here=$(dirname "$0")
mkdir -p "$out"
# Both backends at once: the run takes half as long, and neither suite's
# timed tests bound anything from above that this load could exceed.
for backend in gloo tutti; do
  BACKEND=$backend WORLD_SIZE=$n TEMP_DIR=$(mktemp -d) "$python" "$here/dist_suite.py" \
    --json "$out/$backend.json" "$@" 2> "$out/$backend.log" > "$out/$backend.count" &
done
wait
cat "$out/gloo.count" "$out/tutti.count"
exec "$python" - "$out/gloo.json" "$out/tutti.json" <<'PY'
import json, sys
import torch

# Tests PyTorch's own Python layer refuses to any backend but gloo, by name:
# they fail there before tutti is called.
gloo_only = {}
if int(torch.__version__.split(".")[0]) < 2:
    reason = ("torch 1.x's dist.monitored_barrier raises 'monitored_barrier is only implemented for "
              "GLOO backend' for every other backend (tutti's monitoredBarrier is tested by backend_test.py "
              "through the process group itself)")
    for t in ("test_monitored_barrier_gloo", "test_monitored_barrier_gloo_subgroup",
              "test_monitored_barrier_failure_order", "test_monitored_barrier_wait_all_ranks"):
        gloo_only[t] = reason

gloo, tutti = (json.load(open(p))["outcome"] for p in sys.argv[1:3])
missing = sorted(t for t, v in gloo.items() if v == "passed" and tutti.get(t) != "passed")
print(f"with {json.load(open(sys.argv[1]))['world_size']} processes, torch {torch.__version__}: "
      f"gloo passes {sum(v == 'passed' for v in gloo.values())}, "
      f"tutti passes {sum(v == 'passed' for v in tutti.values())}; gloo passes and tutti does not: {len(missing)}")
unexplained = [t for t in missing if t not in gloo_only]
for t in missing:
    print(f"  {t}: {tutti.get(t, 'absent')}" + (f" -- PyTorch keeps it to gloo: {gloo_only[t]}" if t in gloo_only else ""))
if unexplained:
    print(f"FAIL: {len(unexplained)} test(s) gloo passes and tutti does not: {', '.join(unexplained)}")
    sys.exit(1)
PY
