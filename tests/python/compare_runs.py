"""Compares gpu_ddp.py's JSON from two backends: per-step losses and final
parameters, exactly or within a relative tolerance.

    compare_runs.py REFERENCE.json OTHER.json [TOLERANCE]   (exit 1 if they differ)
"""
import json
import sys


def main():
    ref, other = (json.load(open(p)) for p in sys.argv[1:3])
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    worst = 0.0
    pairs = list(zip(ref["losses"], other["losses"]))
    pairs += [(a, b) for pa, pb in zip(ref["params"], other["params"]) for a, b in zip(pa, pb)]
    for a, b in pairs:
        worst = max(worst, abs(a - b) / max(abs(a), 1e-12))
    same_shape = len(ref["losses"]) == len(other["losses"]) and len(ref["params"]) == len(other["params"])
    ok = same_shape and worst <= tol
    print(f"{other['backend']} vs {ref['backend']}: {len(pairs)} values, largest relative difference "
          f"{worst:.3g} (tolerance {tol:g}): {'same' if ok else 'DIFFERENT'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
