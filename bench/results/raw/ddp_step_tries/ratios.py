# Tutti / gloo step-time ratios per library and mode from an A/B file: python3 ratios.py FILE.jsonl
# Diagnostic script of stop 65 (unchanged from stop 64). See ../../ddp_step_tries.md.
import json,sys,collections,statistics as st
rows=[json.loads(l) for l in open(sys.argv[1]) if '"mode"' in l]
per=collections.defaultdict(dict)
for r in rows: per[(r['lib'],r['round'],r['pass'])][(r['mode'],r['backend'])]=r['step_ms']
g=collections.defaultdict(list)
for k,v in sorted(per.items()):
    for mode in ('ddp','fsdp2'):
        if (mode,'tutti') in v and (mode,'gloo') in v: g[(k[0],mode)].append(v[(mode,'tutti')]/v[(mode,'gloo')])
for k,v in sorted(g.items()):
    print('| %s | %s | %d | %.2f-%.2f | %.3f |'%(k[0],k[1],len(v),min(v),max(v),st.median(v)))
