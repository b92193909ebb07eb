#!/bin/sh
# FSDP2 bit for bit across launches: fsdp2_test.py run twice with
# TUTTI_DETERMINISTIC=1, in separate torchrun launches; the parameters'
# digests must be equal.
# usage: fsdp2_twice.sh PYTHON NPROCS
set -e
python=$1 n=$2
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for i in 1 2; do
  TUTTI_DETERMINISTIC=1 TUTTI_FSDP2_DIGEST_FILE=$dir/$i.json "$here/run_torchrun.sh" "$python" "$n" "$here/fsdp2_test.py"
done
cat "$dir/1.json"; echo
if ! cmp -s "$dir/1.json" "$dir/2.json"; then
  echo "FAIL: the second launch gave other bits: $(cat "$dir/2.json")"
  exit 1
fi
echo "two launches gave the same bits"
