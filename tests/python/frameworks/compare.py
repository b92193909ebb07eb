"""Trains framework rows on gloo and on tutti and compares them: every row's
per-step losses and final parameters must equal gloo's.

  compare.py [--procs N] [--nodes M --prefix P] [--rows WORDS] [--steps S] [--wrong [WORDS]]

With 2 ranks each reduction adds two numbers, in either order the same bits:
the results must be identical. With more ranks the sums come in another
order, so TOLERANCE bounds the difference (float32 rounding, grown by the
updates; measured differences are below 1e-6). Every tutti run must also
show tutti served its calls (task.tutti_calls).

--wrong: each row (or each WORDS names) is also run on tutti with
TUTTI_FW_WRONG=1 (one rank's contribution changed, as a faulty backend would
change it): the comparison must catch it, or the row fails.
"""
import argparse
import sys

import rows

TOLERANCE = 2e-5


def differences(a, b):
    """The largest difference of the losses and of the parameters."""
    if len(a["losses"]) != len(b["losses"]) or a["params"].keys() != b["params"].keys():
        return float("inf"), float("inf")
    loss = max(abs(x - y) for x, y in zip(a["losses"], b["losses"]))
    param = max((a["params"][k] - b["params"][k]).abs().max().item() for k in a["params"])
    return loss, param


def check(gloo, tutti, world, steps):
    """What is wrong with tutti's run against gloo's, or None."""
    tolerance = 0.0 if world == 2 else TOLERANCE
    if len(tutti["losses"]) != steps:
        return f"{len(tutti['losses'])} losses, not {steps}"
    if tutti["tutti_calls"] < steps:
        return f"tutti served {tutti['tutti_calls']} calls in {steps} steps: the framework trained beside it"
    loss, param = differences(gloo, tutti)
    if loss > tolerance or param > tolerance:
        return f"differs from gloo by {loss:.3g} in the losses, {param:.3g} in the parameters (allowed {tolerance:g})"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--procs", type=int, default=2, help="processes per node")
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--prefix", help="namespace nodes PREFIX-n0..; this host when absent")
    parser.add_argument("--rows", default="", help="comma-separated words of row names")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--wrong", nargs="?", const="*", default=None, metavar="WORDS",
                        help="also run the rows sabotaged (those WORDS name, every row without them): "
                             "each must be caught")
    args = parser.parse_args()
    import task

    steps = args.steps or task.STEPS
    world = args.procs * args.nodes
    common = dict(procs=args.procs, nodes=args.nodes, prefix=args.prefix, steps=steps)
    selected = rows.by_names(args.rows)
    named = [] if args.wrong is None else selected if args.wrong == "*" else rows.by_names(args.wrong)
    sabotaged = [r for r in selected if r in named]
    failures = []
    for row in selected:
        try:
            gloo = rows.run(row, "gloo", **common)
            tutti = rows.run(row, "tutti", **common)
            problem = check(gloo, tutti, world, steps)
            caught = None
            if problem is None and row in sabotaged:
                caught = check(gloo, rows.run(row, "tutti", wrong=True, **common), world, steps)
                problem = None if caught else "a sabotaged run (TUTTI_FW_WRONG=1) went unnoticed"
        except RuntimeError as e:
            problem = f"did not finish: {e}"
        if problem:
            failures.append(f"{row.name}: {problem}")
            print(f"FAIL {row.name}: {problem.splitlines()[0]}", flush=True)
            continue
        loss, param = differences(gloo, tutti)
        print(f"ok {row.name}: losses {tutti['losses'][0]:.5f} .. {tutti['losses'][-1]:.5f}; largest difference "
              f"from gloo: losses {loss:.3g}, parameters {param:.3g}; tutti served {tutti['tutti_calls']} calls"
              + (f"; sabotaged run caught ({caught})" if caught else ""), flush=True)
    where = f"{args.nodes} namespace nodes x {args.procs}" if args.prefix else f"{args.procs} processes on this host"
    for f in failures:
        print(f, file=sys.stderr)
    print(f"{len(selected) - len(failures)} of {len(selected)} rows equal gloo's ({where}, {steps} steps"
          + (f", each of {len(sabotaged)} sabotaged runs caught" if sabotaged else "") + ")")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
