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
gloo_only = {
    "test_ddp_logging_data_cpu": (
        "DDP's logging data takes backend_name from the C++ ProcessGroup, which names every "
        "backend registered from outside PyTorch 'custom' (BackendType::CUSTOM); the test "
        "expects dist.get_backend()'s 'tutti'"),
}

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
