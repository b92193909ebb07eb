#!/usr/bin/env bash
# scripts/check-deps.py passes on this build, and fails, naming the file and
# its package, when a package the build needs is left out of install-deps.sh's
# list: hwloc's headers and library always; when the torch extension was
# built, PyTorch's headers, which python/requirements.txt pins (PyPI).
set -uo pipefail
build=$1 source=$2
check=$source/scripts/check-deps.py
fail() { echo "FAIL: $*"; exit 1; }

out=$("$check" "$build") || fail "the check fails on the build as it is:"$'\n'"$out"
echo "$out"

expect_caught() {  # package, a file of it the build reads, what the line says of it
  local out
  out=$("$check" "$build" --drop "$1") && fail "dropping $1 was not caught:"$'\n'"$out"
  grep -q "$2.*$3" <<<"$out" || fail "dropping $1: no line names $2 and says '$3':"$'\n'"$out"
  echo "dropping $1 is caught: $(grep -c "$3" <<<"$out") file(s), e.g. $(grep -m1 "$2" <<<"$out")"
}
expect_caught libhwloc-dev /usr/include/hwloc.h \
  "from package libhwloc-dev, which scripts/install-deps.sh neither names"
if compgen -G "$build/python/tutti_torch/*.so" >/dev/null; then
  expect_caught torch /torch/include/torch/ \
    "from PyPI package torch==[^,]*, which python/requirements.txt does not pin"
fi
echo "PASS"
