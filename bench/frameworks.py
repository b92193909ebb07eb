"""Time per training step of every framework row (tests/python/frameworks/),
on gloo and on tutti, passes alternating which backend goes first.

  frameworks.py --procs N [--nodes M --prefix P] [--passes K] [--steps S] [--rows WORDS]

Prints one JSON line per run: {"row", "backend", "pass", "step_ms", "steps"}:
rank 0's median step time over the steps after WARMUP (each row timed
where its framework lets a callback see the step begin and end).
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python", "frameworks"))
import rows  # noqa: E402

WARMUP = 3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--prefix")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--rows", default="")
    args = parser.parse_args()
    print(json.dumps({"procs": args.procs, "nodes": args.nodes, "steps": args.steps, "warmup": WARMUP}), flush=True)
    for p in range(args.passes):
        for row in rows.by_names(args.rows):
            for backend in (("tutti", "gloo") if p % 2 == 0 else ("gloo", "tutti")):
                result = rows.run(row, backend, procs=args.procs, nodes=args.nodes, prefix=args.prefix,
                                  steps=args.steps)
                timed = result["step_ms"][WARMUP:]
                print(json.dumps({"row": row.name, "backend": backend, "pass": p,
                                  "step_ms": statistics.median(timed), "steps": len(timed)}), flush=True)


if __name__ == "__main__":
    main()
