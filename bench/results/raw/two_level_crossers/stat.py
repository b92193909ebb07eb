import re,statistics,collections,sys
d=collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    lib=l.split()[0]
    for m in re.finditer(r'(\d+) ([\d.]+) (\w+);',l): d[int(m.group(1))][lib].append(float(m.group(2)))
for s in sorted(d):
    b=d[s]['base']; n=d[s]['new']
    print(s, 'base med %.1f %s'%(statistics.median(b),[round(x) for x in b]), 'new med %.1f %s'%(statistics.median(n),[round(x) for x in n]))
