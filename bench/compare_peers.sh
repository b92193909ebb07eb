#!/usr/bin/env bash
# Float32 sum all-reduce, 2 and 4 ranks, 8 B to 64 MiB: tutti (shared memory,
# and TCP loopback with TUTTI_SHM_DISABLE=1) beside Open MPI (vader, vader with
# huge pages, TCP) and Gloo (TCP) on this machine. Each tutti config runs right
# after the peer configs it is compared with, and the whole set runs PASSES
# times, so slow drift of a shared machine hits both sides alike.
# Writes bench/results/allreduce_vs_peers.md, its plots (allreduce_vs_peers_{2,4}ranks.png,
# by bench/plot.py) and the raw outputs under raw/.
#   PEERS=../shared/peers  the peers' harness (run_all.sh installs Open MPI and Gloo)
#   OUT=bench/results      where the report goes
#   PASSES=2
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=${PEERS:-../shared/peers}
OUT=${OUT:-bench/results}
PASSES=${PASSES:-2}
raw=$(mktemp -d)
mkdir -p "$OUT/raw"
scripts/build.sh >/dev/null
perf=build/bench/tutti-perf
export TUTTI_SOCKET_IFNAME=lo

peer() {  # pass, config names...
  local pass=$1
  shift
  WITH_MPICH=0 PASSES=1 RESULTS="$raw/peers_${pass}_$1" ONLY="$*" "$PEERS/run_all.sh" \
    >>"$raw/peers.log" 2>&1
  mkdir -p "$raw/pass$pass"
  cp "$raw/peers_${pass}_$1/pass1/"*.csv "$raw/pass$pass/"
}

tutti() {  # pass, ranks, shm|tcp
  local off=0
  [[ $3 == tcp ]] && off=1
  TUTTI_SHM_DISABLE=$off "$perf" -np "$2" -b 8 -e 64M -f 2 -n 20 -w 20 \
    --csv "$raw/pass$1/tutti_${2}_$3.csv" >"$raw/pass$1/tutti_${2}_$3.txt"
}

for pass in $(seq 1 "$PASSES"); do
  peer "$pass" openmpi_2_vader openmpi_2_vader_thp
  tutti "$pass" 2 shm
  peer "$pass" gloo_2_tcp openmpi_2_tcp
  tutti "$pass" 2 tcp
  peer "$pass" openmpi_4_vader
  tutti "$pass" 4 shm
  peer "$pass" gloo_4_tcp openmpi_4_tcp
  tutti "$pass" 4 tcp
done
python3 bench/compare_peers.py "$raw" >"$OUT/allreduce_vs_peers.md"
# The same figures as pictures, the passes' medians (matplotlib: Debian's python).
for np in 2 4; do
  files=()
  for f in "$raw"/pass*/{tutti,openmpi,gloo}_"${np}"_*.csv; do
    case $f in
      */tutti_*_shm.csv) files+=("tutti shm=$f") ;;
      */tutti_*_tcp.csv) files+=("tutti tcp=$f") ;;
      *) files+=("$f") ;;
    esac
  done
  /usr/bin/python3 bench/plot.py --out "$OUT/allreduce_vs_peers_${np}ranks.png" \
    --title "float32 sum all-reduce, $np ranks on this machine" "${files[@]}"
done
for pass in $(seq 1 "$PASSES"); do
  mkdir -p "$OUT/raw/pass$pass"
  cp "$raw/pass$pass/"* "$OUT/raw/pass$pass/"
done
cat "$OUT/allreduce_vs_peers.md"
rm -rf "$raw"
