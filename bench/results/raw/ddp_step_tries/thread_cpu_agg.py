import json,re,collections,sys
agg=collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    m=re.search(r'CPU (\{.*\})',line)
    if not m: continue
    d=json.loads(m.group(1))
    key=(d['mode'],d['backend'])
    tot=0
    for k,v in d['per_step_ms'].items():
        agg[key][k].append(v); tot+=v
    agg[key]['TOTAL'].append(tot)
for key,th in agg.items():
    print(key)
    for k,v in sorted(th.items(), key=lambda kv:-sum(kv[1])):
        print('   %-20s n=%2d mean %.1f  %s'%(k,len(v),sum(v)/len(v), [round(x) for x in v][:12]))
