#!/bin/sh
# torch.distributed.checkpoint over tutti: FSDP2 state saved by SAVE_PROCS
# processes, loaded by LOAD_PROCS (dcp_test.py).
# usage: dcp_test.sh PYTHON SAVE_PROCS LOAD_PROCS
set -e
python=$1 save=$2 load=$3
here=$(dirname "$0")
TUTTI_DCP_DIR=$(mktemp -d)
export TUTTI_DCP_DIR
trap 'rm -rf "$TUTTI_DCP_DIR"' EXIT
TUTTI_DCP_PHASE=save "$here/run_torchrun.sh" "$python" "$save" "$here/dcp_test.py"
TUTTI_DCP_PHASE=load "$here/run_torchrun.sh" "$python" "$load" "$here/dcp_test.py"
