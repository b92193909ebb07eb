#!/bin/sh
# PyTorch's _DistTestBase on gloo and on tutti, with N processes, in one run:
# prints both counts and every test gloo passes that tutti does not.
#   compare_suite.sh PYTHON NPROCS [OUTDIR] [-k NAME ...]
set -e
python=$1 n=$2 out=${3:-$(mktemp -d)}
shift 3 2>/dev/null || shift $#
here=$(dirname "$0")
mkdir -p "$out"
for backend in gloo tutti; do
  BACKEND=$backend WORLD_SIZE=$n TEMP_DIR=$(mktemp -d) "$python" "$here/dist_suite.py" \
    --json "$out/$backend.json" "$@" 2> "$out/$backend.log" | tail -1
done
"$python" - "$out/gloo.json" "$out/tutti.json" <<'PY'
import json, sys
gloo, tutti = (json.load(open(p))["outcome"] for p in sys.argv[1:3])
missing = sorted(t for t, v in gloo.items() if v == "passed" and tutti.get(t) != "passed")
print(f"gloo passes {sum(v == 'passed' for v in gloo.values())}, tutti passes "
      f"{sum(v == 'passed' for v in tutti.values())}; gloo passes and tutti does not: {len(missing)}")
for t in missing:
    print(f"  {t}: {tutti.get(t, 'absent')}")
PY
