#!/usr/bin/env bash
# How single calls spread on namespace nodes that share cores: tutti-perf
# (its own choices, a fresh cache) with every rank's flight recorder on,
# then per rank and size the mean, the typical time the cost model uses
# (src/comm/tuning/typical_time.h: the mean without the slowest third) and
# percentiles of the calls' own times.
# Needs the nodes first: tests/multinode/netns.sh up NODES tutti-x [4gbit]
#   LAYOUT="4 1" (default) or "2 2"; PERFARGS as tutti-perf's.
cd "$(dirname "$0")/../../../.."
source bench/node_ranks.sh
layout=(${LAYOUT:-4 1})
out=$(mktemp -d /tmp/call_spread.XXXX)
node_ranks tutti-x "${layout[0]}" "${layout[1]}" "$out/perf.csv" TUTTI_CACHE_DIR="$out/cache" \
  TUTTI_TRACE_FILE="$out/trace.%r.jsonl" TUTTI_TRACE_CALLS=4000 \
  build/bench/tutti-perf ${PERFARGS:--b 512 -e 4K -f 8 -n 400 -w 20} >/dev/null
python3 - "$out" $((layout[0] * layout[1])) <<'PY'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
print("| rank | bytes | calls | algorithm | mean us | typical us | p10 | p50 | p75 | p90 |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in range(n):
    by = {}
    for line in open(f"{out}/trace.{r}.jsonl"):
        c = json.loads(line)
        if c.get("dtype") == "float":  # tutti-perf's calls, not its checks
            by.setdefault(c["count"] * 4, []).append((c["took_us"], c["algorithm"]))
    for b, calls in sorted(by.items()):
        t = sorted(x for x, _ in calls)
        k = len(t) - max(1, len(t) // 3)
        q = lambda p: t[int(p * (len(t) - 1))]
        print(f"| {r} | {b} | {len(t)} | {calls[0][1]} | {sum(t) / len(t):.1f} | {sum(t[:k]) / k:.1f} | "
              f"{q(.1):.1f} | {q(.5):.1f} | {q(.75):.1f} | {q(.9):.1f} |")
PY
rm -rf "$out"
