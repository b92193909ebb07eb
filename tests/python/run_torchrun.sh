#!/bin/sh
# Runs a script under torchrun with N processes on this host (loopback only).
# --redirects=2 --tee=2: each rank's stderr goes to the console, named.
# usage: run_torchrun.sh PYTHON NPROCS SCRIPT
set -e
python=$1 nprocs=$2 script=$3
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export TUTTI_SOCKET_IFNAME=lo GLOO_SOCKET_IFNAME=lo TUTTI_TIMEOUT=120 OMP_NUM_THREADS=1
exec "$python" -m torch.distributed.run --nnodes=1 --nproc_per_node="$nprocs" \
  --master_addr=127.0.0.1 --master_port="$port" \
  --redirects=2 --tee=2 "$script"
