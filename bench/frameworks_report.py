#!/usr/bin/env python3
"""The table and bar chart of bench/frameworks.py's JSON lines.

  bench/frameworks_report.py --out PREFIX --command CMD "LABEL=FILE" ...

Writes PREFIX.md (per setup: each row's median step time on tutti and on
gloo over the passes, and tutti over gloo per pass) and PREFIX.png.
"""
import collections
import json
import statistics

import matplotlib

matplotlib.use("Agg")  # files only
import matplotlib.pyplot as plt  # noqa: E402

import report_doc  # noqa: E402


def read(path):
    header, times = None, collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            item = json.loads(line)
            if "row" not in item:
                header = item
            else:
                times[item["row"]].setdefault(item["backend"], {})[item["pass"]] = item["step_ms"]
    return header, times


def section(label, header, times):
    lines = [f"## {label}", "",
             f"{header['procs'] * header['nodes']} processes; {header['steps']} steps per run, the first "
             f"{header['warmup']} untimed; each figure rank 0's median step time, median over the passes.", "",
             "| row | tutti | gloo | tutti / gloo | per pass |", "| --- | --- | --- | --- | --- |"]
    medians = {}
    for row, by_backend in times.items():
        t, g = by_backend["tutti"], by_backend["gloo"]
        mt, mg = statistics.median(t.values()), statistics.median(g.values())
        medians[row] = (mt, mg)
        per_pass = " / ".join(f"{t[p] / g[p]:.2f}" for p in sorted(t) if p in g)
        lines.append(f"| {row} | {mt:.1f} ms | {mg:.1f} ms | {mt / mg:.2f}x | {per_pass} |")
    slower = [r for r, (mt, mg) in medians.items() if mt > mg]
    lines += ["", f"tutti at most gloo's time in {len(medians) - len(slower)} of {len(medians)} rows"
              + (f"; slower in: {', '.join(slower)}." if slower else "."), ""]
    return lines, medians


def main():
    args = report_doc.parse_args()
    doc = ["# The frameworks people train with: time per step, tutti against gloo", "",
           report_doc.made_by(args.command),
           "Every row trains the BERT-style classifier of tests/python/frameworks/task.py (random weights, synthetic",
           "tokens, SGD) the way its framework documents, once on gloo and once on tutti, passes alternating which",
           "goes first. Only `TUTTI_SOCKET_IFNAME`/`GLOO_SOCKET_IFNAME` are set (the interface); nothing is tuned.",
           "That every row's losses and parameters equal gloo's is checked by tests/python/frameworks/compare.py.", ""]
    sections = []
    for label, path in args.inputs:
        header, times = read(path)
        lines, medians = section(label, header, times)
        doc += lines
        sections.append((label, medians))
    report_doc.write_markdown(args.out, doc)
    fig, axes = plt.subplots(len(sections), 1, figsize=(10, 4.5 * len(sections)), squeeze=False)
    for ax, (label, medians) in zip(axes[:, 0], sections):
        names = list(medians)
        ys = range(len(names))
        ax.barh([y + 0.2 for y in ys], [medians[n][0] for n in names], 0.4, label="tutti")
        ax.barh([y - 0.2 for y in ys], [medians[n][1] for n in names], 0.4, label="gloo")
        ax.set_yticks(list(ys), names)
        ax.invert_yaxis()
        ax.set_xlabel("ms per step (median)")
        ax.set_title(label)
        ax.legend()
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=100)


if __name__ == "__main__":
    main()
