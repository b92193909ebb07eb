#!/usr/bin/env python3
"""Tables for bench/small_vs_openmpi.sh: per collective, rank count and size,
the median over passes of each library's time per call, their ratio, and
whether tutti's bus bandwidth is at least Open MPI's."""
import collections
import glob
import json
import os
import re
import statistics
import sys

raw, iters = sys.argv[1], sys.argv[2]
times = collections.defaultdict(lambda: collections.defaultdict(list))  # (coll, np, bytes) -> lib -> [us]
for path in glob.glob(os.path.join(raw, "ompi_*.txt")):
    np = int(re.match(r"ompi_(\d+)_", os.path.basename(path)).group(1))
    for line in open(path):
        coll, size, us, _ = line.split()
        times[(coll, np, int(size))]["ompi"].append(float(us))
for path in glob.glob(os.path.join(raw, "tutti_*.json")):
    np, coll = re.match(r"tutti_(\d+)_(\w+)_\d+\.json", os.path.basename(path)).groups()
    # Out of place for all-reduce (as MPI's), in place for broadcast (MPI_Bcast is).
    placement = "in-place" if coll == "broadcast" else "out-of-place"
    for r in json.load(open(path))["results"]:
        if r["placement"] == placement:
            times[(coll, int(np), int(r["size"]))]["tutti"].append(float(r["time_us"]))

print("# Small messages: tutti beside Open MPI (shared memory)\n")
print(f"Command: `ITERS={iters} bench/small_vs_openmpi.sh` (Open MPI 4.1, `--mca pml ob1 --mca btl self,vader`;")
print("tutti-perf `-np N`). Time per call in microseconds, each side's median over the passes")
print("(the passes' figures in brackets); ratio = tutti's time / Open MPI's, so below 1 is")
print("faster and, at equal bytes, a higher bus bandwidth; best = the same of each side's fastest")
print("pass (a launch on this VM runs either fast or about twice as slow, whichever library it is).")
print("4 ranks share 2 cores.\n")
for coll in ("allreduce", "broadcast", "barrier"):
    for np in (2, 4):
        rows = sorted(k for k in times if k[0] == coll and k[1] == np)
        if not rows:
            continue
        print(f"## {coll}, {np} ranks\n")
        print("| bytes | tutti us | Open MPI us | ratio | best |")
        print("|---|---|---|---|---|")
        for key in rows:
            t, o = times[key]["tutti"], times[key]["ompi"]
            if not t or not o:
                continue
            mt, mo = statistics.median(t), statistics.median(o)
            fmt = lambda v: " / ".join(f"{x:.3f}" for x in v)
            print(f"| {key[2]} | {mt:.3f} ({fmt(t)}) | {mo:.3f} ({fmt(o)}) | {mt / mo:.2f}x | {min(t) / min(o):.2f}x |")
        print()
