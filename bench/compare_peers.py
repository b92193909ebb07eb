#!/usr/bin/env python3
"""Tables of tutti against the peers from one compare_peers.sh run (all passes)."""
import csv
import glob
import os
import subprocess
import sys

SIZES = [8, 65536, 1 << 20, 16 << 20, 64 << 20]
LABEL = {8: "8 B", 65536: "64 KiB", 1 << 20: "1 MiB", 16 << 20: "16 MiB", 64 << 20: "64 MiB"}


def read_pass(pdir):
    peers, tutti = {}, {}
    for path in glob.glob(os.path.join(pdir, "*.csv")):
        name = os.path.basename(path)
        with open(path) as f:
            rows = list(csv.DictReader(f))
        if name.startswith("tutti_"):
            _, n, kind = name[:-4].split("_")
            for r in rows:
                if r["placement"] == "out-of-place":
                    tutti[(int(n), kind, int(r["size"]))] = (
                        float(r["time_us"]), float(r["busbw_gbs"]), int(r["wrong"]))
        else:
            for r in rows:
                if r.get("op") == "allreduce" and r.get("busbw_GBps"):
                    peers[(r["peer"], int(r["ranks"]), r["transport"], int(r["bytes"]))] = (
                        float(r["time_us"]), float(r["busbw_GBps"]))
    return peers, tutti


def fmt_us(us):
    return f"{us / 1000:.1f} ms" if us >= 10000 else (f"{us:.0f} us" if us >= 100 else f"{us:.2f} us")


def bw(x):
    return "-" if x is None else f"{x:.3f}"


def joined(vals, f):
    return " / ".join(f(v) for v in vals)


def main(root):
    passes = sorted(glob.glob(os.path.join(root, "pass*")), key=lambda p: int(p.rsplit("pass", 1)[1]))
    data = [read_pass(p) for p in passes]
    env = subprocess.run(["sh", "-c", "date -u +%FT%TZ; uname -r; nproc; "
                          "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         capture_output=True, text=True).stdout.split("\n")
    print("# All-reduce (float32 sum): tutti against Open MPI and Gloo, same run, same machine\n")
    print(f"Run ending {env[0]} on {env[3].strip()} ({env[2]} cores, shared VM), kernel {env[1]};")
    print(f"{len(passes)} passes, values given as `pass 1 / pass 2`. Command: `bench/compare_peers.sh`,")
    print("which interleaves each tutti config with the peer configs it is compared to:")
    print("tutti-perf `-np N -b 8 -e 64M -f 2 -n 20 -w 20` (out-of-place rows; TCP with")
    print("`TUTTI_SHM_DISABLE=1`; `TUTTI_SOCKET_IFNAME=lo`) and the peers' harness")
    print("`../shared/peers/run_all.sh` (`ONLY=<config>`, one pass each).\n")
    print("busbw in GB/s by nccl-tests' formula (2(n-1)/n x bytes/time). tutti-perf reports")
    print("the mean time of 20 back-to-back calls, averaged over ranks; the peers report the")
    print("median of 5-25 batches of back-to-back calls (slowest rank). Every tutti result")
    print("was checked element by element; `#wrong` was 0 everywhere unless shown. Ratios")
    print("above 1 mean tutti is faster; for 8 B they are ratios of times.\n")
    verdicts = []
    for n in (2, 4):
        print(f"## Shared memory, {n} ranks\n")
        print("| size | tutti time | tutti busbw | Open MPI vader | Open MPI vader + THP | tutti / best Open MPI |")
        print("|---|---|---|---|---|---|")
        for s in SIZES:
            t = [d[1].get((n, "shm", s)) for d in data]
            if not all(t):
                continue
            v = [d[0].get(("openmpi", n, "vader", s), (0, None))[1] for d in data]
            vt = [d[0].get(("openmpi", n, "vader-thp", s), (0, None))[1] for d in data]
            best = [max(x or 0, y or 0) for x, y in zip(v, vt)]
            ratios = [tt[1] / b if b else 0 for tt, b in zip(t, best)]
            if s == 8:  # bandwidths round to zero: compare speed as time ratios
                bt = [min(x for x in (d[0].get(("openmpi", n, "vader", s), (0,))[0],
                                      d[0].get(("openmpi", n, "vader-thp", s), (0,))[0]) if x > 0)
                      for d in data]
                ratios = [b / tt[0] for tt, b in zip(t, bt)]
            wrong = sum(tt[2] for tt in t)
            print(f"| {LABEL[s]} | {joined(t, lambda x: fmt_us(x[0]))} | {joined(t, lambda x: bw(x[1]))}"
                  f"{'' if not wrong else f' ({wrong} wrong)'} | {joined(v, bw)} | {joined(vt, bw)} | "
                  f"{joined(ratios, lambda r: f'{r:.2f}x')} |")
            if s >= 65536:
                verdicts.append((f"shm {n} ranks {LABEL[s]}: busbw >= best Open MPI", min(ratios) >= 1,
                                 joined(ratios, lambda r: f"{r:.2f}x")))
            if s == 8 and n == 2:
                verdicts.append(("shm 2 ranks 8 B all-reduce under 2 us", max(x[0] for x in t) < 2,
                                 joined(t, lambda x: fmt_us(x[0]))))
        print()
        print(f"## TCP loopback, {n} ranks\n")
        print("| size | tutti time | tutti busbw | Gloo | Open MPI tcp | tutti / Gloo | tutti / Open MPI |")
        print("|---|---|---|---|---|---|---|")
        for s in SIZES:
            t = [d[1].get((n, "tcp", s)) for d in data]
            if not all(t):
                continue
            g = [d[0].get(("gloo", n, "tcp-lo", s), (0, None))[1] for d in data]
            o = [d[0].get(("openmpi", n, "tcp-lo", s), (0, None))[1] for d in data]
            gt = [d[0].get(("gloo", n, "tcp-lo", s), (0, None))[0] for d in data]
            ot = [d[0].get(("openmpi", n, "tcp-lo", s), (0, None))[0] for d in data]
            if s == 8:  # bandwidths round to zero: compare speed as time ratios
                rg = [x / tt[0] if tt[0] else 0 for tt, x in zip(t, gt)]
                ro = [x / tt[0] if tt[0] else 0 for tt, x in zip(t, ot)]
            else:
                rg = [tt[1] / x if x else 0 for tt, x in zip(t, g)]
                ro = [tt[1] / x if x else 0 for tt, x in zip(t, o)]
            wrong = sum(tt[2] for tt in t)
            print(f"| {LABEL[s]} | {joined(t, lambda x: fmt_us(x[0]))} | {joined(t, lambda x: bw(x[1]))}"
                  f"{'' if not wrong else f' ({wrong} wrong)'} | {joined(g, bw)} | {joined(o, bw)} | "
                  f"{joined(rg, lambda r: f'{r:.2f}x')} | {joined(ro, lambda r: f'{r:.2f}x')} |")
            if s >= (1 << 20):
                verdicts.append((f"tcp {n} ranks {LABEL[s]}: busbw >= 2x Gloo", min(rg) >= 2,
                                 joined(rg, lambda r: f"{r:.2f}x")))
                verdicts.append((f"tcp {n} ranks {LABEL[s]}: busbw >= Open MPI tcp", min(ro) >= 1,
                                 joined(ro, lambda r: f"{r:.2f}x")))
        print()
    print("## Targets, pass by pass\n")
    print("| target | met in every pass | ratio or time |")
    print("|---|---|---|")
    for name, ok, detail in verdicts:
        print(f"| {name} | {'yes' if ok else '**no**'} | {detail} |")


if __name__ == "__main__":
    main(sys.argv[1])
