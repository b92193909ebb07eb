#!/usr/bin/env python3
"""Summarizes bench/deterministic_cost.sh's output: deterministic busbw over the
default's, per pass, transport, rank count, collective and size."""
import collections
import re
import statistics
import sys

runs = collections.defaultdict(dict)
key = None
for line in open(sys.argv[1]):
    m = re.match(r"## pass (\d+) (\w+) np (\d+) (\w+) deterministic (\d)", line)
    if m:
        key = m.groups()
    elif line.strip():
        size, busbw = line.split()
        runs[key][int(size)] = float(busbw)
print("| transport | ranks | collective | size | default busbw (GB/s) | deterministic busbw | ratio per pass | median ratio |")
print("|---|---|---|---|---|---|---|---|")
groups = sorted({k[1:4] for k in runs}, key=lambda g: (g[0], int(g[1]), g[2]))
for transport, np, coll in groups:
    passes = sorted({k[0] for k in runs if k[1:4] == (transport, np, coll)})
    sizes = sorted(runs[(passes[0], transport, np, coll, "0")])
    for size in sizes:
        base = [runs[(p, transport, np, coll, "0")][size] for p in passes]
        det = [runs[(p, transport, np, coll, "1")][size] for p in passes]
        ratio = [d / b for d, b in zip(det, base)]
        fmt = lambda v, f: " / ".join(f.format(x) for x in v)
        print(f"| {transport} | {np} | {coll} | {size >> 20} MiB | {fmt(base, '{:.2f}')} | {fmt(det, '{:.2f}')} | {fmt(ratio, '{:.2f}x')} | {statistics.median(ratio):.2f}x |")
