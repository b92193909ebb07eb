#!/usr/bin/env python3
"""Tables and pictures of one bench/across_nodes.sh run.

  bench/across_nodes.py RAW OUT [ARGS]

RAW holds RATE/LAYOUT/passN/{tutti,openmpi,gloo,tutti_peers}.csv; OUT gets
across_nodes.md and one PNG per rate and layout (bench/plot.py). Times are
medians over the passes; the ratio column gives tutti's time over Open MPI's
in each pass. tutti_peers is tutti timed by the peers' own program.
"""
import csv
import glob
import os
import re
import statistics
import subprocess
import sys

SIZES = [8, 64, 512, 4 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
LIBS = ["tutti", "openmpi", "gloo", "tutti_peers"]
NAMES = {"tutti": "tutti", "openmpi": "Open MPI", "gloo": "Gloo", "tutti_peers": "tutti, peers' timing"}


def size_label(b):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d %s" % (b >> shift, unit)
    return "%d B" % b


def fmt_us(us):
    return "%.1f ms" % (us / 1000) if us >= 10000 else ("%.0f us" % us if us >= 100 else "%.1f us" % us)


def read(path):
    """size -> (time_us, busbw_GBps, wrong, choice) of one library's CSV; choice is
    tutti's (algorithm, channels, predicted_us) for the size, None for the peers."""
    out = {}
    try:
        with open(path) as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return out
    for r in rows:
        if "placement" in r:  # tutti-perf --csv
            if r["placement"] == "out-of-place":
                choice = (r["algorithm"], int(r["channels"]), float(r["predicted_us"])) if r.get("algorithm") else None
                out[int(r["size"])] = (float(r["time_us"]), float(r["busbw_gbs"]), int(r["wrong"]), choice)
        elif r.get("op") == "allreduce":
            out[int(r["bytes"])] = (float(r["time_us"]), float(r["busbw_GBps"]), 0, None)
    return out


def link_gbps(rate):
    if rate == "none":
        return None
    num = float(rate.rstrip("gbitmk"))
    return num if rate.endswith("gbit") else num / 1000


def section(raw, rate, layout, out_dir, lines):
    passes = sorted(glob.glob(os.path.join(raw, rate, layout, "pass*")))
    data = [{lib: read(os.path.join(p, lib + ".csv")) for lib in LIBS} for p in passes]
    nodes, per = layout.split("x")
    shaped = "links shaped to %s each way (tc tbf)" % rate if rate != "none" else "veth links as they are"
    lines.append("\n## %s nodes x %s ranks, %s\n" % (nodes, per, shaped))
    lines.append("| size | tutti | Open MPI | Gloo | tutti / Open MPI (per pass) | busbw GB/s: tutti / Open MPI / Gloo "
                 "| tutti, peers' timing (busbw) |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    behind, below_gloo, peers_below_gloo, wrong = [], [], [], 0
    link = link_gbps(rate)
    for size in SIZES:
        med = {}
        for lib in LIBS:
            vals = [d[lib][size] for d in data if size in d[lib]]
            wrong += sum(v[2] for v in vals)
            med[lib] = (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals)) if vals else None
        ratios = [d["tutti"][size][0] / d["openmpi"][size][0] for d in data
                  if size in d["tutti"] and size in d["openmpi"] and d["openmpi"][size][0] > 0]
        cell = lambda lib: fmt_us(med[lib][0]) if med[lib] else "-"
        bw = " / ".join("%.3f" % med[lib][1] if med[lib] else "-" for lib in LIBS[:3])
        same = "%s (%.3f)" % (cell("tutti_peers"), med["tutti_peers"][1]) if med["tutti_peers"] else "-"
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            size_label(size), cell("tutti"), cell("openmpi"), cell("gloo"),
            " / ".join("%.2fx" % r for r in ratios) or "-", bw, same))
        if ratios and min(ratios) > 1:
            behind.append(size_label(size))
        if med["tutti"] and med["gloo"] and med["tutti"][1] < med["gloo"][1]:
            below_gloo.append(size_label(size))
        if med["tutti_peers"] and med["gloo"] and med["tutti_peers"][1] < med["gloo"][1]:
            peers_below_gloo.append(size_label(size))
    lines.append("")
    lines.append("- Sizes where tutti took longer than Open MPI in every pass: %s." % (", ".join(behind) or "none"))
    lines.append("- Sizes where tutti's busbw is below Gloo's (medians): %s." % (", ".join(below_gloo) or "none"))
    if any(d["tutti_peers"] for d in data):
        lines.append("- The same, tutti timed by the peers' program: %s." % (", ".join(peers_below_gloo) or "none"))
    if link:
        big = [d["tutti"][s][1] for d in data for s in SIZES if s >= 16 << 20 and s in d["tutti"]]
        # All-reduce moves 2(n-1)/n of the buffer over each rank's share of its node's link.
        if big:
            lines.append("- tutti's busbw from 16 MiB: %.3f-%.3f GB/s; the link carries %.3f GB/s each way."
                         % (min(big), max(big), link / 8))
    lines.append("- Wrong elements reported by tutti-perf: %d." % wrong)
    model(data, os.path.join(raw, rate, layout, "init.csv.0.log"), lines)
    png = "across_nodes_%s_%s.png" % (rate, layout)
    files = []
    for i, p in enumerate(passes):
        for lib in LIBS:
            f = os.path.join(p, lib + ".csv")
            if os.path.exists(f):
                files.append("%s=%s" % (NAMES[lib], f))
    if files:
        subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "plot.py"),
                        "--out", os.path.join(out_dir, png),
                        "--title", "all-reduce float32 sum, %s nodes x %s ranks, %s" % (nodes, per, shaped)] + files,
                       check=False)
        lines.append("\n![%s](%s)" % (png, png))


def model(data, init_log, lines):
    """The cost model's choice and prediction for each size, as each pass's
    tutti-perf reported them (tuttiCommLastChoice), against that pass's own
    time: every pass's communicators measured their links for themselves."""
    if not any(c for d in data for (_, _, _, c) in d["tutti"].values()):
        return
    measured = None
    if os.path.exists(init_log):
        measured = re.search(r"links measured with every rank busy: (.*)", open(init_log, errors="replace").read())
    lines.append("\nThe cost model, per pass: the choice tutti-perf reported for each size, its predicted time, and "
                 "the prediction over the pass's time. Links measured at init (rank 0, one more run logging init): %s"
                 % (measured.group(1).strip() if measured else "not logged"))
    lines.append("\n| size | choice (per pass) | predicted (per pass) | predicted / measured (per pass) | within 30% |")
    lines.append("| --- | --- | --- | --- | --- |")
    within = pairs = 0
    for size in SIZES:
        runs = [d["tutti"][size] for d in data if size in d["tutti"] and d["tutti"][size][3]]
        if not runs:
            continue
        ratios = [c[2] / t for (t, _, _, c) in runs]
        close = sum(abs(r - 1) <= 0.3 for r in ratios)
        within, pairs = within + close, pairs + len(ratios)
        lines.append("| %s | %s | %s | %s | %d of %d |" % (
            size_label(size), " / ".join("%s %d ch" % (c[0], c[1]) if c[1] else c[0] for (_, _, _, c) in runs),
            " / ".join(fmt_us(c[2]) for (_, _, _, c) in runs), " / ".join("%.2f" % r for r in ratios),
            close, len(ratios)))
    lines.append("\n- Predictions within 30%% of the same pass's time: %d of %d sizes and passes." % (within, pairs))


def main():
    raw, out_dir = sys.argv[1], sys.argv[2]
    args = sys.argv[3] if len(sys.argv) > 3 else ""
    env = subprocess.run(["sh", "-c", "date -u +%FT%TZ; nproc"], capture_output=True, text=True).stdout.split()
    rates = sorted(os.listdir(raw), key=lambda r: (r != "none", r))
    # A rate's folder: "none" or a tc rate (4gbit, 100mbit); RAW holds other folders too (and may hold OUT).
    rates = [r for r in rates if os.path.isdir(os.path.join(raw, r)) and re.fullmatch(r"none|[0-9.]+[gmk]?bit", r)]
    here = os.path.dirname(os.path.abspath(__file__))
    commit = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty=+changes"],
                            capture_output=True, text=True).stdout.strip() or "?"
    passes = len(glob.glob(os.path.join(raw, "*", "*", "pass*"))) // max(1, len(glob.glob(os.path.join(raw, "*", "*", "pass1"))))
    lines = ["# All-reduce across nodes: tutti, Open MPI and Gloo in one run", "",
             "Made by `bench/across_nodes.sh%s` (tutti at %s, %d passes) ending %s on this machine (%s cores, a shared VM)."
             % (" " + args if args else "", commit, passes, env[0], env[1]),
             "Nodes are network namespaces joined by veth through a bridge; ranks are placed in blocks.",
             "tutti: tutti-perf (`-b 8 -e 64M -f 2 -n 20 -w 5`, out-of-place rows, its own choices, only",
             "`TUTTI_SOCKET_IFNAME=data0` set, and `TUTTI_CACHE_DIR` a directory of the run's for each layout",
             "and rate: pass 1 starts with no call times kept from earlier runs, as on a new cluster);",
             "Open MPI 4.1 (`btl self,vader,tcp`, `--oversubscribe",
             "--mca mpi_yield_when_idle 1`) and Gloo (TCP full mesh) through bench/peers/allreduce_ranks.cpp.",
             "tutti-perf gives the mean of back-to-back calls; the peers the median of 5-25 batches",
             "(slowest rank); the last column times tutti with the peers' program (its own choices, the",
             "same method), run after them in each pass. Times are medians over the passes."]
    failures = os.path.join(raw, "failures")
    if os.path.exists(failures):
        lines.append("\nFailed runs: " + "; ".join(open(failures).read().split("\n")).strip("; "))
    for rate in rates:
        for layout in sorted(os.listdir(os.path.join(raw, rate))):
            section(raw, rate, layout, out_dir, lines)
    with open(os.path.join(out_dir, "across_nodes.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
