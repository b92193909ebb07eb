#!/usr/bin/env python3
"""Summary of first_launches.tsv: per statistic and layout, the median of
measured over predicted and how many sizes x launches were predicted within
30% (predicted / measured in 0.7-1.3); then each size's median time.
   summary.py [first_launches.tsv [BATCH,...]]"""
import collections, csv, statistics, sys

path = sys.argv[1] if len(sys.argv) > 1 else "first_launches.tsv"
batches = sys.argv[2].split(",") if len(sys.argv) > 2 else None  # e.g. r3: one batch's launches only
ratio, took = collections.defaultdict(list), collections.defaultdict(list)
launches = collections.defaultdict(set)
for r in csv.DictReader(open(path), delimiter="\t"):
    if batches and r["batch"] not in batches:
        continue
    k = (r["statistic"], r["layout"])
    ratio[k].append(float(r["measured_over_predicted"]))
    took[k + (int(r["bytes"]),)].append(float(r["us"]))
    launches[k].add((r["batch"], r["launch"]))
print("| statistic | layout | launches | sizes x launches | measured / predicted, median | within 30% |")
print("| --- | --- | --- | --- | --- | --- |")
for k in sorted(ratio):
    v = ratio[k]
    within = sum(0.7 <= 1 / x <= 1.3 for x in v)
    print("| %s | %s | %d | %d | %.2f | %d (%.0f%%) |" % (k + (len(launches[k]), len(v), statistics.median(v), within,
                                                           100.0 * within / len(v))))
stats = sorted({k[0] for k in ratio})
for layout in sorted({k[1] for k in ratio}):
    print("\n%s, median us over launches\n\n| size | %s |" % (layout, " | ".join(stats)))
    print("| --- |" + " --- |" * len(stats))
    for size in sorted({k[2] for k in took if k[1] == layout}):
        print("| %d | %s |" % (size, " | ".join("%.1f" % statistics.median(took[(s, layout, size)])
                                               if took[(s, layout, size)] else "-" for s in stats)))
