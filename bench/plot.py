#!/usr/bin/env python3
"""Plots bus bandwidth and latency against message size, one line per library.

Reads tutti-perf's --json and --csv files and the peers' CSVs
(../shared/peers: peer,ranks,transport,op,bytes,time_us,...,busbw_GBps).
A file may be given as LABEL=PATH to name its line; otherwise the label
comes from the file (the peer and transport, or the file's name). A label
seen in several files (passes) is drawn at the median of each size.

  bench/plot.py --out bench/results/allreduce_2ranks.png --title "..." FILE...

Writes one PNG with two panels (busbw, time), both axes logarithmic.
"""
import argparse
import collections
import csv
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402


def tutti_label(path):
    name = os.path.splitext(os.path.basename(path))[0]
    return name.replace("_", " ")


def read_rows(path):
    """Yields (label, bytes, time_us, busbw_GBps) of a file's out-of-place rows."""
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("{"):
        doc = json.loads(text)
        label = "tutti %s" % doc.get("memory", "")
        for r in doc["results"]:
            if r.get("placement", "out-of-place") == "out-of-place":
                yield label.strip(), int(r["size"]), float(r["time_us"]), float(r["busbw_gbs"])
        return
    rows = list(csv.DictReader(text.splitlines()))
    if not rows:
        raise ValueError("%s: no rows" % path)
    if "peer" in rows[0]:  # the peers' harness
        for r in rows:
            yield "%s %s" % (r["peer"], r["transport"]), int(r["bytes"]), float(r["time_us"]), float(r["busbw_GBps"])
    elif "placement" in rows[0]:  # tutti-perf --csv
        for r in rows:
            if r["placement"] == "out-of-place":
                yield tutti_label(path), int(r["size"]), float(r["time_us"]), float(r["busbw_gbs"])
    else:
        raise ValueError("%s: neither tutti-perf's nor the peers' columns" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the PNG to write")
    ap.add_argument("--title", default="")
    ap.add_argument("files", nargs="+", help="[LABEL=]PATH")
    a = ap.parse_args()

    series = collections.defaultdict(lambda: collections.defaultdict(list))  # label -> size -> [(t, bw)]
    for spec in a.files:
        label, path = spec.split("=", 1) if "=" in spec and not os.path.exists(spec) else (None, spec)
        try:
            for own, size, t, bw in read_rows(path):
                if t > 0 and bw > 0:  # a log scale has no place for an empty measurement
                    series[label or own][size].append((t, bw))
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
            print("plot.py: %s: %s" % (path, e), file=sys.stderr)
            return 2

    fig, (bw_ax, t_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
    for label in sorted(series):
        sizes = sorted(series[label])
        times = [statistics.median(t for t, _ in series[label][s]) for s in sizes]
        bws = [statistics.median(bw for _, bw in series[label][s]) for s in sizes]
        style = "-" if label.startswith("tutti") else "--"
        bw_ax.plot(sizes, bws, style, marker="o", markersize=3, label=label)
        t_ax.plot(sizes, times, style, marker="o", markersize=3, label=label)
    for ax, what in ((bw_ax, "bus bandwidth (GB/s)"), (t_ax, "time per call (us)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(what)
        ax.grid(True, which="major", alpha=0.3)
    bw_ax.legend(fontsize=8)
    if a.title:
        fig.suptitle(a.title)
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print("wrote %s (%d lines)" % (a.out, len(series)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
