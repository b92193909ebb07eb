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
    header, times, cpu = None, collections.defaultdict(dict), collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if "mode" not in row:
                header = row
            else:
                times[(row["mode"], row["backend"])][row["pass"]] = row["step_ms"]
                cpu[(row["mode"], row["backend"])][row["pass"]] = row.get("cpu_ms")
    return header, times, cpu


def ddp_floors(header, times, cpu, tutti_ddp, gloo_ddp):
    """How low a DDP step goes here: DDP sending nothing (a floor), DDP
    waiting for every rank with no data, and sending nothing plus the CPU the
    gradients' all-reduce takes beyond the cores' idle time (estimates)."""
    wall = {k: statistics.median(v.values()) for k, v in times.items()}
    used = {k: statistics.median(v.values()) for k, v in cpu.items() if None not in v.values()}
    rows = [("DDP sending nothing (PyTorch's `noop_hook`)", wall[("ddp", "noop")])]
    rows += [(f"DDP waiting for every rank, one float a bucket on {b} (no gradients exchanged)",
              wall[("ddp", "sync-" + b)]) for b in ("tutti", "gloo") if ("ddp", "sync-" + b) in wall]
    notes = []
    cores = header.get("cores")
    if ("allreduce", "tutti") in used and cores:
        idle = max(0.0, wall[("ddp", "noop")] * cores - used[("ddp", "noop")])
        busy = used[("compute", "none")] / (wall[("compute", "none")] * cores)
        rows.append((f"DDP sending nothing, plus tutti's all-reduce CPU beyond the idle core time, over {cores} cores",
                     wall[("ddp", "noop")] + max(0.0, used[("allreduce", "tutti")] - idle) / cores))
        notes = [f"The gradients' all-reduce alone (one {header['parameters'] * 4 / 1e6:.1f} MB call a step, no "
                 f"compute): tutti {wall[('allreduce', 'tutti')]:.1f} ms and {used[('allreduce', 'tutti')]:.1f} ms "
                 f"of CPU summed over the ranks; gloo {wall[('allreduce', 'gloo')]:.1f} ms and "
                 f"{used[('allreduce', 'gloo')]:.1f} ms. Every rank shares {cores} cores, which compute alone keeps "
                 f"{busy:.0%} busy, and DDP sending nothing leaves {idle:.1f} ms of core time a step idle: CPU a "
                 f"call takes beyond that lengthens the step by itself over {cores} cores.", ""]
    rows.append(("DDP on tutti", tutti_ddp))
    lines = ["", "How low a DDP step goes here (medians over the passes; DDP sending nothing is a floor no backend goes below, the other rows estimate what waiting and the all-reduce's CPU add to it):", "",
             "| DDP step | time | / gloo's DDP step |", "| --- | --- | --- |"]
    lines += [f"| {what} | {t:.0f} ms | {t / gloo_ddp:.2f}x |" for what, t in rows]
    return lines + [""] + notes


def section(label, header, times, cpu):
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
    if ("ddp", "noop") in times:  # older runs have no such rows
        lines += ddp_floors(header, times, cpu, *medians["ddp"])
        medians["ddp floor"] = statistics.median(times[("ddp", "noop")].values())
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
        header, times, cpu = read(path)
        lines, medians, compute = section(label, header, times, cpu)
        doc += lines
        bars.append((label, medians, compute))
    report_doc.write_markdown(args.out, doc)

    fig, axes = plt.subplots(1, len(bars), figsize=(5 * len(bars), 4), squeeze=False)
    for ax, (label, medians, compute) in zip(axes[0], bars):
        floor = medians.pop("ddp floor", None)
        modes = list(medians)
        xs = range(len(modes))
        ax.bar([x - 0.2 for x in xs], [medians[m][0] for m in modes], 0.4, label="tutti")
        ax.bar([x + 0.2 for x in xs], [medians[m][1] for m in modes], 0.4, label="gloo")
        ax.axhline(compute, color="gray", linestyle="--", label="compute alone")
        if floor is not None:
            ax.plot([-0.45, 0.45], [floor, floor], color="black", linestyle=":", label="DDP sending nothing")
        ax.set_xticks(list(xs), [m.upper() for m in modes])
        ax.set_ylabel("step time (ms)")
        ax.set_title(label)
        ax.legend()
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=100)
    print("\n".join(doc))


if __name__ == "__main__":
    main()
