"""Reads the step-time rounds of bench/results/sleep_across_nodes.md: per library
and mode, tutti / gloo of every pass, sorted, and tutti's step times.
  python3 ratios.py FILE.jsonl"""
import json,sys,collections
rows=[json.loads(l) for l in open(sys.argv[1]) if '"mode"' in l]
d=collections.defaultdict(dict)
for r in rows: d[(r['lib'],r['round'],r['pass'],r['mode'])][r['backend']]=r['step_ms']
out=collections.defaultdict(list)
for (lib,rnd,p,mode),v in sorted(d.items()):
    if mode=='compute': continue
    if 'tutti' in v and 'gloo' in v: out[(lib,mode)].append((round(v['tutti'],1),round(v['gloo'],1),round(v['tutti']/v['gloo'],2)))
for k,v in sorted(out.items()):
    rs=sorted(x[2] for x in v); print(k, 'ratios', rs, 'median', rs[len(rs)//2], 'tutti ms', sorted(x[0] for x in v))
