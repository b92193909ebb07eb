#!/usr/bin/env bash
# bench/plot.py draws tutti-perf's --json and --csv and a peer's CSV as one
# PNG, a line each, and refuses a file it cannot read, naming it; tutti-perf's
# JSON carries the slowest rank's init time.
#   plot_test.sh TUTTI_PERF SOURCE_DIR
set -euo pipefail
perf=$1
src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export TUTTI_SOCKET_IFNAME=lo
"$perf" -np 2 -b 8 -e 64K -f 8 -n 5 -w 2 --json "$dir/tutti.json" --csv "$dir/tutti.csv" >"$dir/perf.txt"
grep -Eq '^# Init: [0-9.]+ ms' "$dir/perf.txt" || { echo "no init time in the header"; cat "$dir/perf.txt"; exit 1; }
grep -Eq '"init_ms": [0-9.]+' "$dir/tutti.json" || { echo "no init_ms in the JSON"; exit 1; }
cat >"$dir/peer.csv" <<'CSV'
peer,ranks,transport,op,bytes,time_us,algbw_GBps,busbw_GBps,min_us,max_us,batch,batches
openmpi,2,vader,allreduce,8,0.50,0.0160,0.0160,0.46,0.57,1000,25
openmpi,2,vader,allreduce,65536,19.21,3.4111,3.4111,19.00,25.57,512,25
CSV
out=$(/usr/bin/python3 "$src/bench/plot.py" --out "$dir/plot.png" --title test \
  "$dir/tutti.json" "tutti csv=$dir/tutti.csv" "$dir/peer.csv")
[[ $out == *"(3 lines)"* ]] || { echo "expected 3 lines: $out"; exit 1; }
[[ $(head -c 4 "$dir/plot.png" | od -An -c | tr -d ' ') == '211PNG' ]] || { echo "not a PNG"; exit 1; }
echo "garbage" >"$dir/bad.csv"
set +e
err=$(/usr/bin/python3 "$src/bench/plot.py" --out "$dir/bad.png" "$dir/bad.csv" 2>&1)
rc=$?
set -e
[[ $rc == 2 && $err == *bad.csv* ]] || { echo "a bad file: rc $rc, '$err'"; exit 1; }
echo "plot_test: ok"
