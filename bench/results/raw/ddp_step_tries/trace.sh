#!/bin/bash
# trace.sh LIB [ENV...]: one-host DDP passes with the flight recorder; per-bucket skew and time after the last rank in
# Diagnostic script of stop 65, kept as it ran (scratch paths under /tmp; libraries are CPU-only
# builds copied to /tmp/libs/NAME). See ../../ddp_step_tries.md.
lib=$1; shift
cd /work/main; rm -f /tmp/s65/tr-*.jsonl
env "$@" TUTTI_TRACE_FILE=/tmp/s65/tr-%r.jsonl TUTTI_TRACE_CALLS=100000 LD_LIBRARY_PATH=/tmp/libs/$lib TUTTI_CACHE_DIR=/tmp/s65/hcache-$lib PYTHONPATH=$PWD/build/python TUTTI_BENCH_PASSES=2 tests/python/run_torchrun.sh $PWD/.venv/bin/python 4 bench/torch_step_time.py 2>&1 | grep step_ms | grep -v fsdp | sed 's/.*"backend"/"backend"/' | tr '\n' ' '; echo
python3 - <<'PY'
import json, statistics as st
by={r:{j['seq']:j for j in map(json.loads,open(f'/tmp/s65/tr-{r}.jsonl'))} for r in range(4)}
res={}
for seq,j0 in sorted(by[0].items()):
    js=[by[r].get(seq) for r in range(4)]
    if any(x is None for x in js) or j0['call']!='tuttiAllReduce' or j0['count']<200000: continue
    s=[x['start_us'] for x in js]; e=[x['end_us'] for x in js]
    res.setdefault((j0['count'],j0.get('algorithm'),j0.get('channels')),[]).append(((max(s)-min(s))/1000,(max(e)-max(s))/1000, (max(e)-min(e))/1000))
for k,v in res.items():
    q=lambda i: ' '.join('%.1f'%x for x in sorted(a[i] for a in v)[::max(1,len(v)//8)])
    print(k,len(v),'skew med %.1f'%st.median(a for a,b,c in v),'lastin->out med %.1f'%st.median(b for a,b,c in v), 'end spread med %.1f'%st.median(c for a,b,c in v))
    print('   lastin->out:', q(1))
PY
