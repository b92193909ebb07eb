#!/usr/bin/env python3
"""Tables and a picture from bench/torch_step_time.py's JSON lines.

  bench/torch_step_time_report.py --out PREFIX --command CMD "LABEL=FILE" ...

Writes PREFIX.md (a table per setup: median step time of each mode and
backend, tutti over gloo per pass, and what each backend adds to the compute
floor) and PREFIX.png (bars: median step time per setup and mode).
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
            row = json.loads(line)
            if "mode" not in row:
                header = row
            else:
                times[(row["mode"], row["backend"])][row["pass"]] = row["step_ms"]
    return header, times


def section(label, header, times):
    compute = statistics.median(times[("compute", "none")].values())
    lines = [f"## {label}", "",
             f"{header['world']} ranks; {header['parameters']:,} parameters "
             f"({header['parameters'] * 4 / 1e6:.1f} MB of float32 gradients); "
             f"{header['rows_per_rank']} sequences of {header['config']['seq']} tokens per rank and step; "
             f"each figure the slowest rank's mean over {header['timed_steps']} steps, median over the passes.",
             "", f"Compute alone (the same steps, no communication): {compute:.0f} ms.", "",
             "| mode | tutti | gloo | tutti / gloo (per pass) | above compute: tutti / gloo |",
             "| --- | --- | --- | --- | --- |"]
    medians = {}
    for mode in ("ddp", "fsdp2"):
        t, g = times[(mode, "tutti")], times[(mode, "gloo")]
        mt, mg = statistics.median(t.values()), statistics.median(g.values())
        medians[mode] = (mt, mg)
        ratios = " / ".join(f"{t[p] / g[p]:.2f}" for p in sorted(t) if p in g)
        lines.append(f"| {mode.upper()} | {mt:.0f} ms | {mg:.0f} ms | {mt / mg:.2f}x ({ratios}) | "
                     f"{mt - compute:.0f} ms / {mg - compute:.0f} ms |")
    return lines + [""], medians, compute


def main():
    args = report_doc.parse_args()
    doc = ["# Training step time on PyTorch 2.x: tutti against gloo", "",
           report_doc.made_by(args.command),
           "The small transformer of tests/python/tiny_transformer.py at a larger config, trained with DDP and with",
           "FSDP2 (fully_shard per block and at the root) on a tutti group and on a gloo group in the same",
           "processes, passes alternating which backend goes first, after one untimed round of each.",
           "Only `TUTTI_SOCKET_IFNAME`/`GLOO_SOCKET_IFNAME` are set (the interface); nothing is tuned.", ""]
    bars = []
    for label, path in args.inputs:
        header, times = read(path)
        lines, medians, compute = section(label, header, times)
        doc += lines
        bars.append((label, medians, compute))
    report_doc.write_markdown(args.out, doc)

    fig, axes = plt.subplots(1, len(bars), figsize=(5 * len(bars), 4), squeeze=False)
    for ax, (label, medians, compute) in zip(axes[0], bars):
        modes = list(medians)
        xs = range(len(modes))
        ax.bar([x - 0.2 for x in xs], [medians[m][0] for m in modes], 0.4, label="tutti")
        ax.bar([x + 0.2 for x in xs], [medians[m][1] for m in modes], 0.4, label="gloo")
        ax.axhline(compute, color="gray", linestyle="--", label="compute alone")
        ax.set_xticks(list(xs), [m.upper() for m in modes])
        ax.set_ylabel("step time (ms)")
        ax.set_title(label)
        ax.legend()
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=100)
    print("\n".join(doc))


if __name__ == "__main__":
    main()
