#!/usr/bin/env python3
"""Two arms of model_drift.md reports side by side: each report's count
within 30% and geometric mean, then each layout and size's time (predicted
over the ratio, median over the arm's runs and passes) and B over A.
   model_drift_ab.py A_GLOB B_GLOB   e.g. 'per_algorithm_mean_trim_*.md' 'per_algorithm_mean_cap4_*.md'"""
import glob, re, statistics, sys

UNIT = {"us": 1, "ms": 1e3, "s": 1e6}


def times(path):
    out = {}
    for sec in re.split(r"\n## ", open(path).read())[1:]:
        layout = sec.split(",")[0]
        for m in re.finditer(r"\| (\d+ [KM]?i?B) \| [^|]+\| ([^|]+)\| ([^|]+)\|", sec):
            preds = [p.split() for p in m.group(2).split("/")]
            ratios = [float(r) for r in m.group(3).split("/")]
            out[(layout, m.group(1))] = [float(v) * UNIT[u] / r for (v, u), r in zip(preds, ratios)]
    return out


arms = []
for pattern in sys.argv[1:3]:
    merged = {}
    for path in sorted(glob.glob(pattern)):
        summary = open(path).read().split("In all: ")[1].split("\n")[:2]
        print(path + ": " + " ".join(summary))
        for k, v in times(path).items():
            merged.setdefault(k, []).extend(v)
    arms.append(merged)
print("\n| layout | size | A (us) | B (us) | B / A |\n| --- | --- | --- | --- | --- |")
ratios = []
for k in arms[0]:
    a, b = statistics.median(arms[0][k]), statistics.median(arms[1].get(k, [float("nan")]))
    ratios.append(b / a)
    print("| %s | %s | %.1f | %.1f | %.2f |" % (k + (a, b, b / a)))
print("\nGeometric mean of B / A over every size: %.2f" % statistics.geometric_mean(ratios))
