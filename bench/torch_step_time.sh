#!/usr/bin/env bash
# Step time of DDP and FSDP2 on tutti and on gloo in one run (bench/torch_step_time.py):
# 4 ranks on this host, then 2 namespace nodes x 2 ranks (tests/multinode/netns.sh),
# links as they are. Writes bench/results/torch_step_time.md and .png.
#   bench/torch_step_time.sh [PASSES]     (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
passes=${1:-5}
python=$PWD/.venv/bin/python
raw=$(mktemp -d)
trap 'rm -rf "$raw"; tests/multinode/netns.sh down 2 tutti-st >/dev/null 2>&1 || true' EXIT
export PYTHONPATH=$PWD/build/python TUTTI_BENCH_PASSES=$passes
tests/python/run_torchrun.sh "$python" 4 bench/torch_step_time.py 2>&1 |
  sed -n 's/^\(\[default0\]:\)\?\({.*}\)$/\2/p' >"$raw/one_host_4.jsonl"
tests/multinode/netns.sh up 2 tutti-st >/dev/null
tests/python/run_torchrun_nodes.sh "$python" 2 2 "$PWD/bench/torch_step_time.py" tutti-st 2>&1 |
  sed -n 's/^\[node 0\] \(\[default0\]:\)\?\({.*}\)$/\2/p' >"$raw/two_nodes_2x2.jsonl"
/usr/bin/python3 bench/torch_step_time_report.py --command "bench/torch_step_time.sh $passes" \
  --out bench/results/torch_step_time "one host, 4 ranks=$raw/one_host_4.jsonl" \
  "2 namespace nodes x 2 ranks=$raw/two_nodes_2x2.jsonl"
