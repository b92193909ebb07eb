#!/usr/bin/env python3
"""bench/large_vs_links.sh's table: what a ring of single TCP streams carries
over each link when every node sends at once, the bus bandwidth that rate
gives an all-reduce, and tutti's large all-reduces in the same passes.

  large_vs_links.py RAW OUT.md COMMAND
RAW holds RATE/LAYOUT/passN/{ring.txt,tutti.csv}.
"""
import csv
import os
import statistics
import sys

import report_doc
from across_nodes import link_gbps


def stream_rates(path):
    """bytes -> GB/s of the slowest stream (each rank's median iteration)."""
    slowest = {}
    with open(path) as f:
        for line in f:
            _, size, median, _ = line.split()
            slowest[int(size)] = max(slowest.get(int(size), 0.0), float(median))
    return {b: b / s / 1e9 for b, s in slowest.items()}


def tutti_rows(path):
    """bytes -> (busbw GB/s, choice) of tutti-perf's out-of-place rows."""
    with open(path) as f:
        return {int(r["size"]): (float(r["busbw_gbs"]), f"{r['algorithm']} {r['channels']} ch")
                for r in csv.DictReader(f) if r["placement"] == "out-of-place"}


def busbw_factor(nodes, ranks):
    """busbw over the links' rate for an all-reduce that sends each node's
    link the fewest bytes: 2(N-1)/N of the buffer each way (a ring across the
    node leaders), against the 2(n-1)/n busbw counts."""
    return ((ranks - 1) / ranks) * (nodes / (nodes - 1))


def main():
    raw, out, command = sys.argv[1:4]
    doc = ["# What the links carry at once, beside tutti's large all-reduces", "",
           report_doc.made_by(command),
           "Nodes are network namespaces joined by veth through a bridge (tests/multinode/netns.sh), all on this",
           "machine's 2 cores. In each pass and layout: a ring of TCP streams, one process a node",
           "(bench/peers/tcp_ring.cpp: each node sends N bytes to the next and receives N from the previous at",
           "once, nothing reduced; the slowest stream's median of 5), then tutti-perf's float32 sum all-reduce",
           "(its own choices). An all-reduce must move at least 2(N-1)/N of its buffer over each of the N nodes'",
           "links each way, so at the streams' rate it reaches a bus bandwidth of that rate times",
           "(n-1)/n x N/(N-1) (n ranks), before any reduction's CPU: what a plain ring of one TCP stream a link",
           "would give. It is a reference, not a bound: tutti may send over several sockets a link.", "",
           "| links | layout | size | one stream a link, GB/s (per pass) | busbw at the streams' rate | tutti busbw (per pass) | tutti / streams' busbw | tutti / link rate | tutti's choice |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for rate in sorted(os.listdir(raw)):
        if rate == "cache" or not os.path.isdir(os.path.join(raw, rate)):
            continue
        link = link_gbps(rate)
        for layout in sorted(os.listdir(os.path.join(raw, rate))):
            nodes, per = (int(x) for x in layout.split("x"))
            base = os.path.join(raw, rate, layout)
            passes = sorted(p for p in os.listdir(base) if p.startswith("pass"))
            streams = [stream_rates(os.path.join(base, p, "ring.txt")) for p in passes]
            tutti = [tutti_rows(os.path.join(base, p, "tutti.csv")) for p in passes]
            for size in sorted(streams[0]):
                s = [x[size] for x in streams]
                t = [x[size][0] for x in tutti]
                streams_busbw = statistics.median(s) * busbw_factor(nodes, nodes * per)
                vs_link = f"{statistics.median(t) / (link / 8):.2f}" if link else "-"
                doc.append(f"| {rate} | {layout} | {size >> 20} MiB | {' / '.join(f'{v:.3f}' for v in s)} | "
                           f"{streams_busbw:.3f} | {' / '.join(f'{v:.3f}' for v in t)} | "
                           f"{statistics.median(t) / streams_busbw:.2f} | {vs_link} | "
                           f"{' / '.join(x[size][1] for x in tutti)} |")
    doc += ["", "Medians over the passes in the streams' busbw and ratio columns; a shaped link carries its rate / 8 "
                "GB/s each way (4gbit: 0.500)."]
    with open(out, "w") as f:
        f.write("\n".join(doc) + "\n")
    print("\n".join(doc))


if __name__ == "__main__":
    main()
