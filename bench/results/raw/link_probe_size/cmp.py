# cmp.py BASE.md NEW.md: two across_nodes.md reports side by side, layout by
# layout: the predictions within 30%, the misses, and tutti's and Open MPI's
# medians by size with the new run's per-pass ratios.
import re, sys
def parse(path):
    txt = open(path).read(); secs = {}
    for part in re.split(r"\n## ", txt)[1:]:
        title = part.splitlines()[0]
        rows = {}
        for line in part.splitlines():
            c = [x.strip() for x in line.strip().strip("|").split("|")]
            if len(c) == 7 and c[0] and c[0][0].isdigit():
                rows[c[0]] = c
        pred = re.search(r"within 30% of the same pass's time: (\d+) of", part)
        miss = re.findall(r"- (Sizes where[^:]*): (.*)", part)
        secs[title] = (rows, pred.group(1) if pred else "?", miss)
    return secs
def us(v):
    v = v.split()[0:2]; x = float(v[0].replace(",", ""))
    return x * (1000 if v[1] == "ms" else 1)
a, b = parse(sys.argv[1]), parse(sys.argv[2])
for t in a:
    ra, pa, ma = a[t]; rb, pb, mb = b[t]
    print(f"## {t}: predictions within 30% {pa} -> {pb}")
    for (k, v), (_, w) in zip(ma, mb): print(f"   {k}: {v} -> {w}")
    print("   size: tutti base -> new (new/base) | OMPI base, new | tutti/OMPI per pass new")
    for s in ra:
        x, y = us(ra[s][1]), us(rb[s][1])
        print(f"   {s:>7}: {ra[s][1]:>9} -> {rb[s][1]:>9} ({y/x:.2f}) | {ra[s][2]:>9}, {rb[s][2]:>9} | {rb[s][4]}")
