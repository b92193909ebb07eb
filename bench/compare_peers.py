#!/usr/bin/env python3
"""Tables of tutti against the peers, from one compare_peers.sh run."""
import csv
import glob
import os
import subprocess
import sys

SIZES = [8, 65536, 1 << 20, 16 << 20, 64 << 20]
LABEL = {8: "8 B", 65536: "64 KiB", 1 << 20: "1 MiB", 16 << 20: "16 MiB", 64 << 20: "64 MiB"}


def peers(root):
    out = {}
    for path in glob.glob(os.path.join(root, "peers", "pass1", "*.csv")):
        with open(path) as f:
            for r in csv.DictReader(f):
                if r.get("op") != "allreduce" or not r.get("busbw_GBps"):
                    continue
                key = (r["peer"], int(r["ranks"]), r["transport"], int(r["bytes"]))
                out[key] = (float(r["time_us"]), float(r["busbw_GBps"]))
    return out


def tutti(root, n, kind):
    out = {}
    path = os.path.join(root, f"tutti_{n}_{kind}.csv")
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["placement"] != "out-of-place":
                continue
            out[int(r["size"])] = (float(r["time_us"]), float(r["busbw_gbs"]), int(r["wrong"]))
    return out


def fmt_us(us):
    return f"{us / 1000:.1f} ms" if us >= 10000 else (f"{us:.0f} us" if us >= 100 else f"{us:.2f} us")


def ratio(a, b):
    return f"{a / b:.2f}x" if b > 0 else "-"


def main(root):
    p = peers(root)
    env = subprocess.run(["sh", "-c", "date -u +%FT%TZ; uname -r; nproc; "
                          "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         capture_output=True, text=True).stdout.split("\n")
    print("# All-reduce (float32 sum) against Open MPI and Gloo, same run, same machine\n")
    print(f"Run {env[0]} on {env[3].strip()} ({env[2]} cores), kernel {env[1]}.")
    print("Produced by `bench/compare_peers.sh` (tutti-perf -np N -b 8 -e 64M -f 2 -n 20 -w 20,")
    print("out-of-place rows; the peers' harness `../shared/peers/run_all.sh`, one pass).")
    print("busbw in GB/s (nccl-tests formula 2(n-1)/n x bytes/time). tutti-perf reports the")
    print("mean time of 20 back-to-back calls averaged over ranks; the peers report the median")
    print("batch of back-to-back calls (slowest rank). Every tutti result was checked (#wrong = 0")
    print("unless the table says otherwise).\n")
    for n in (2, 4):
        t = tutti(root, n, "shm")
        print(f"## Shared memory, {n} ranks\n")
        print("| size | tutti time | tutti busbw | Open MPI vader | vader + THP | best Open MPI | tutti / best |")
        print("|---|---|---|---|---|---|---|")
        for s in SIZES:
            if s not in t:
                continue
            tt, tb, wrong = t[s]
            v = p.get(("openmpi", n, "vader", s), (0, 0))[1]
            vt = p.get(("openmpi", n, "vader-thp", s), (0, 0))[1]
            best = max(v, vt)
            w = "" if wrong == 0 else f" ({wrong} wrong)"
            print(f"| {LABEL[s]} | {fmt_us(tt)} | {tb:.3f}{w} | {v:.3f} | {vt:.3f} | {best:.3f} | {ratio(tb, best)} |")
        print()
        t = tutti(root, n, "tcp")
        print(f"## TCP loopback, {n} ranks (tutti with TUTTI_SHM_DISABLE=1)\n")
        print("| size | tutti time | tutti busbw | Gloo | Open MPI tcp | tutti / Gloo | tutti / Open MPI |")
        print("|---|---|---|---|---|---|---|")
        for s in SIZES:
            if s not in t:
                continue
            tt, tb, wrong = t[s]
            g = p.get(("gloo", n, "tcp-lo", s), (0, 0))[1]
            o = p.get(("openmpi", n, "tcp-lo", s), (0, 0))[1]
            w = "" if wrong == 0 else f" ({wrong} wrong)"
            print(f"| {LABEL[s]} | {fmt_us(tt)} | {tb:.3f}{w} | {g:.3f} | {o:.3f} | {ratio(tb, g)} | {ratio(tb, o)} |")
        print()
    print("8-byte latency (time per all-reduce):", ", ".join(
        f"{n} ranks shm {fmt_us(tutti(root, n, 'shm')[8][0])}" for n in (2, 4)))


if __name__ == "__main__":
    main(sys.argv[1])
