#!/usr/bin/env python3
"""The table of one bench/model_drift.sh run.

  bench/model_drift.py RAW/RATE OUT.md [ARGS]

RAW/RATE holds LAYOUT/passN/tutti.csv (tutti-perf --csv, with the cost
model's algorithm, channels and predicted time per size).
"""
import glob
import math
import os
import statistics
import subprocess
import sys

import across_nodes


def main():
    raw, out = sys.argv[1], sys.argv[2]
    args = sys.argv[3] if len(sys.argv) > 3 else ""
    rate = os.path.basename(raw.rstrip("/"))
    env = subprocess.run(["sh", "-c", "date -u +%FT%TZ; nproc"], capture_output=True, text=True).stdout.split()
    here = os.path.dirname(os.path.abspath(__file__))
    commit = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty=+changes"],
                            capture_output=True, text=True).stdout.strip() or "?"
    lines = ["# The cost model's predictions against tutti's times, across nodes", "",
             "Made by `bench/model_drift.sh%s` (tutti at %s) ending %s on this machine (%s cores, a shared VM)."
             % (" " + args if args else "", commit, env[0], env[1]),
             "Nodes are network namespaces joined by veth through a bridge (%s); ranks are placed in blocks. "
             "tutti-perf (`-b 8 -e 64M -f 2 -n 20 -w 5`, out-of-place rows, only `TUTTI_SOCKET_IFNAME=data0` set) "
             "reports each size's choice and prediction; each launch measured its links at init for itself."
             % ("links shaped to %s each way" % rate if rate != "none" else "veth links as they are")]
    within = pairs = 0
    ratios = []
    for layout in sorted(os.listdir(raw)):
        passes = sorted(glob.glob(os.path.join(raw, layout, "pass*")))
        data = [{"tutti": across_nodes.read(os.path.join(p, "tutti.csv"))} for p in passes]
        nodes, per = layout.split("x")
        lines.append("\n## %s nodes x %s ranks, %d passes" % (nodes, per, len(passes)))
        section = []
        across_nodes.model(data, "", section)
        lines += section[1:]  # the per-layout table, without the init line
        for d in data:
            for size in across_nodes.SIZES:
                if size in d["tutti"] and d["tutti"][size][3]:
                    t, _, _, c = d["tutti"][size]
                    pairs += 1
                    within += abs(c[2] / t - 1) <= 0.3
                    ratios.append(c[2] / t)
    lines.append("\nIn all: predictions within 30%% of the time taken at %d of %d sizes and passes." % (within, pairs))
    if ratios:
        # Whether the misses lean one way (a bias of the model or of init's
        # measurement) or both (the machine's drift between init and the calls).
        lines.append("Predicted under 0.7x the time at %d, over 1.3x at %d; geometric mean of predicted / measured %.2f."
                     % (sum(r < 0.7 for r in ratios), sum(r > 1.3 for r in ratios),
                        math.exp(statistics.mean(math.log(r) for r in ratios))))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s" % out)


if __name__ == "__main__":
    main()
