#!/usr/bin/env bash
# scripts/gpu/check.sh on a machine without a GPU, as CI is: its argument
# checks refuse what is wrong, and the GPU steps asked for are listed as
# skipped with the reason (and only those), so the script is tried before a
# GPU is lent. Exit 77 (skipped) where a GPU is present.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
check=$root/scripts/gpu/check.sh
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then exit 77; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$check" >"$out/none.txt" 2>&1
[ $? = 2 ] || fail "no OUTDIR should exit 2"
grep -q "usage:" "$out/none.txt" || fail "no OUTDIR should print the usage"

"$check" "$out/gc" kernels bogus >"$out/bogus.txt" 2>&1
[ $? = 2 ] || fail "an unknown step should exit 2"
grep -q "unknown step: bogus" "$out/bogus.txt" || fail "an unknown step should be named"

TUTTI_GPU_STAGE=$out/no-stage "$check" "$out/gc" kernels >"$out/nostage.txt" 2>&1
[ $? = 2 ] || fail "a missing staged build should exit 2"
grep -q "no staged build in $out/no-stage" "$out/nostage.txt" || fail "a missing staged build should be named"

# A stage whose test binary only exists: no step named below runs it here.
export TUTTI_GPU_STAGE=$out/stage
mkdir -p "$TUTTI_GPU_STAGE/tests"
printf '#!/bin/sh\nexit 1\n' >"$TUTTI_GPU_STAGE/tests/gpu_test"
chmod +x "$TUTTI_GPU_STAGE/tests/gpu_test"
"$check" "$out/gc" kernels lean-worker >"$out/two.txt" 2>&1 || fail "skipping GPU steps should succeed: $(cat "$out/two.txt")"
for s in kernels lean-worker; do
  grep -Eq "^$s +skip .*no GPU here" "$out/two.txt" || fail "step $s not listed as skipped: $(cat "$out/two.txt")"
done
rows=$(grep -Ec '^[a-z0-9-]+ +(skip|pass|FAIL)' "$out/two.txt")
[ "$rows" = 2 ] || fail "only the steps asked for should be listed, got $rows rows: $(cat "$out/two.txt")"
echo "check.sh without a GPU: usage, unknown steps, a missing stage and skipped steps as expected"
