#!/usr/bin/env bash
# Time per step of every framework row (tests/python/frameworks/), on gloo
# and on tutti, 4 processes on this host; with --nodes also 2 namespace
# nodes x 2 (tests/multinode/netns.sh). Writes bench/results/frameworks.md
# and .png.
#   bench/frameworks.sh [PASSES] [--nodes]     (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
passes=${1:-3}
python=$PWD/.venv/bin/python
raw=$(mktemp -d)
trap 'rm -rf "$raw"; tests/multinode/netns.sh down 2 tutti-fw >/dev/null 2>&1 || true' EXIT
export PYTHONPATH=$PWD/build/python
"$python" bench/frameworks.py --procs 4 --passes "$passes" | tee "$raw/one_host.jsonl"
inputs=("one host, 4 processes=$raw/one_host.jsonl")
if [[ ${2:-} == --nodes ]]; then
  tests/multinode/netns.sh up 2 tutti-fw >/dev/null
  "$python" bench/frameworks.py --procs 2 --nodes 2 --prefix tutti-fw --passes "$passes" | tee "$raw/nodes.jsonl"
  inputs+=("2 namespace nodes x 2 processes=$raw/nodes.jsonl")
fi
/usr/bin/python3 bench/frameworks_report.py --command "bench/frameworks.sh $*" --out bench/results/frameworks "${inputs[@]}"
