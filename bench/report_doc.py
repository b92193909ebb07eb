"""What the step-time reports share: their command line, the line that says
how and when a file was made, and writing the Markdown beside its picture.

  PREFIX.md and PREFIX.png from "LABEL=FILE" inputs (--out PREFIX --command CMD)
"""
import argparse
import datetime
import os
import subprocess


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("inputs", nargs="+", help="LABEL=FILE")
    args = ap.parse_args()
    args.inputs = [tuple(item.split("=", 1)) for item in args.inputs]
    return args


def made_by(command):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"Made by `{command}` (tutti at {commit}) ending {now} on this machine (2 cores, a shared VM)."


def write_markdown(out, doc):
    """PREFIX.md: the lines, then the picture PREFIX.png."""
    name = os.path.basename(out)
    with open(out + ".md", "w") as f:
        f.write("\n".join(doc + [f"![{name}.png]({name}.png)", ""]))
