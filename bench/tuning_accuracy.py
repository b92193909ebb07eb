#!/usr/bin/env python3
"""The cost model's predictions against the calls' times, from one rank's log
with TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=TUNING: per all-reduce size, the
choice, the prediction and the median of the calls' times.

  bench/tuning_accuracy.py LOG        (prints a Markdown table)
"""
import collections
import re
import statistics
import sys

CHOICE = re.compile(r"allreduce #(\d+) (\d+) bytes of host memory: (\w+), (\d+) channel\(s\), (\d+) KiB chunks "
                    r"\(predicted ([\d.]+) us\)")
TOOK = re.compile(r"allreduce #(\d+) took ([\d.]+) us")


def rows(path):
    """(bytes, algorithm, channels, chunk KiB, predicted us) -> times of its calls."""
    took = collections.defaultdict(list)
    current = None
    with open(path, errors="replace") as f:
        for line in f:
            m = CHOICE.search(line)
            if m:
                current = (int(m.group(2)), m.group(3), int(m.group(4)), int(m.group(5)), float(m.group(6)))
                continue
            m = TOOK.search(line)
            if m and current:
                took[current].append(float(m.group(2)))
    return took


def main(path):
    took = rows(path)
    print("| bytes | choice | predicted | measured (median of calls) | predicted / measured |")
    print("| --- | --- | --- | --- | --- |")
    for key in sorted(took):
        size, algo, nch, chunk, predicted = key
        measured = statistics.median(took[key])
        print("| %d | %s, %d channel(s), %d KiB chunks | %.1f us | %.1f us (%d calls) | %.2f |"
              % (size, algo, nch, chunk, predicted, measured, len(took[key]), predicted / measured))


if __name__ == "__main__":
    main(sys.argv[1])
