#!/usr/bin/env python3
"""Summarises bench/ucx_vs_socket.sh's CSVs: out-of-place bus bandwidth per
size, the median over passes, and UCX's ratio to the socket transport."""
import csv
import statistics
import subprocess
import sys
from pathlib import Path

raw, passes, command = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


def load(pass_, setting):
    path = raw / f"p{pass_}_{setting}.csv"
    if not path.exists():
        return None
    rows = csv.DictReader(path.open())
    return {int(r["size"]): (float(r["busbw_gbs"]), float(r["time_us"]))
            for r in rows if r["placement"] == "out-of-place"}


def median(setting):
    runs = [r for r in (load(p, setting) for p in range(1, passes + 1)) if r]
    if not runs:
        return None
    return {size: (statistics.median(r[size][0] for r in runs),
                   statistics.median(r[size][1] for r in runs)) for size in runs[0]}


def table(title, group, configs):
    data = {c: median(f"{group}_{c}") for c in configs}
    if not data["socket"]:
        return
    print(f"\n### {title}\n")
    head = "| bytes | " + " | ".join(f"{c} us | {c} busbw GB/s" for c in configs)
    head += " | " + " | ".join(f"{c} / socket" for c in configs if c != "socket") + " |"
    print(head)
    print("|" + " --- |" * (1 + 2 * len(configs) + len(configs) - 1))
    for size in sorted(data["socket"]):
        cells = []
        for c in configs:
            bw, us = data[c][size]
            cells += [f"{us:.1f}", f"{bw:.3f}"]
        s_us = data["socket"][size][1]
        ratios = [f"{s_us / data[c][size][1]:.2f}x" for c in configs if c != "socket"]
        print(f"| {size} | " + " | ".join(cells + ratios) + " |")


rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print("# UCX against tutti's socket transport")
print()
print(f"Made by `{command}` at commit {rev}; median of {passes} passes; float32 sum all-reduce,")
print("out of place, every pair over the network transport (`TUTTI_SHM_DISABLE=1`).")
print("Ratios are speed relative to the socket transport (socket time / UCX time): above 1x UCX is faster.")
table("One host, 2 ranks (loopback)", "host_2", ["socket", "ucx_tcp", "ucx_sm"])
table("One host, 4 ranks on 2 cores (loopback)", "host_4", ["socket", "ucx_tcp", "ucx_sm"])
table("Two namespace nodes, 1 rank each (veth + bridge, unshaped)", "nodes_2", ["socket", "ucx_tcp"])
