import sys, glob, re, statistics as st, collections
d, lay = sys.argv[1], sys.argv[2]
A, B = (sys.argv[3:5] if len(sys.argv) > 4 else ("wt", "new"))
res = collections.defaultdict(lambda: collections.defaultdict(list))
init = collections.defaultdict(list); links = collections.defaultdict(list)
for lib in (A, B):
    for f in sorted(glob.glob(f"{d}/{lib}_{lay}_*.0")):
        txt = open(f).read()
        m = re.search(r"link costs ([0-9.]+)", txt); init[lib].append(float(m.group(1)) if m else 0)
        m = re.search(r"between nodes ([0-9.]+) us, ([0-9.]+) GB/s", txt); links[lib].append(float(m.group(2)) if m else 0)
        for line in txt.splitlines():
            p = line.split()
            if len(p) >= 17 and p[0].isdigit() and p[3] == "sum":
                res[lib][int(p[0])].append((float(p[5]), p[13], float(p[15]), float(p[16])))
print(f"{lay}: link costs ms {A} {init[A]} {B} {init[B]}; net GB/s {A} {links[A]} {B} {links[B]}")
print(f"{'size':>9} {'wt us':>9} {'new us':>9} {'new/wt':>6}  {'wt pred/meas in30':>18} {'new pred/meas in30':>18}  choices wt | new")
tot = {A: 0, B: 0}; n = 0
for s in sorted(res[A]):
    a = [x[0] for x in res[A][s]]; b = [x[0] for x in res[B][s]]
    def acc(lib):
        r = [x[2] / x[0] for x in res[lib][s]]
        k = sum(1 for v in r if 0.7 <= v <= 1.3); tot[lib] += k
        return f"{st.median(r):.2f} {k}/{len(r)}"
    n += len(a)
    ch = lambda lib: ",".join(x[1] for x in res[lib][s])
    print(f"{s:>9} {st.median(a):>9.1f} {st.median(b):>9.1f} {st.median(b)/st.median(a):>6.2f}  {acc(A):>18} {acc(B):>18}  {ch(A)} | {ch(B)}")
print("within 30%:", tot, "of", n)
