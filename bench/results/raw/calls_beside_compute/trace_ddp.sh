#!/bin/bash
# trace_ddp.sh [ENV...]: one-host DDP/FSDP2 passes with the flight recorder; per-size call times
# Diagnostic script of stop 64, kept as it ran (scratch paths under /tmp; libraries are CPU-only
# builds copied to /tmp/libs/NAME). See ../../calls_beside_compute.md.
cd /work/main; rm -f /tmp/s64/tr-*.jsonl
env "$@" TUTTI_TRACE_FILE=/tmp/s64/tr-%r.jsonl TUTTI_TRACE_CALLS=100000 LD_LIBRARY_PATH=/work/main/build PYTHONPATH=$PWD/build/python TUTTI_BENCH_PASSES=2 tests/python/run_torchrun.sh $PWD/.venv/bin/python 4 bench/torch_step_time.py 2>&1 | grep step_ms | grep ddp | tr '\n' ' '; echo
python3 - <<'PY'
import json, statistics as st
by={r:{j['seq']:j for j in map(json.loads,open(f'/tmp/s64/tr-{r}.jsonl'))} for r in range(4)}
res={}
for seq,j0 in sorted(by[0].items()):
    js=[by[r].get(seq) for r in range(4)]
    if any(x is None for x in js) or j0['call']!='tuttiAllReduce' or j0['count']<200000: continue
    s=[x['start_us'] for x in js]; e=[x['end_us'] for x in js]
    res.setdefault((j0['count'],j0.get('algorithm'),j0.get('channels')),[]).append(((max(s)-min(s))/1000,(max(e)-max(s))/1000))
for k,v in res.items():
    print(k,len(v),'skew med %.1f'%st.median(a for a,b in v),'lastin->out med %.1f'%st.median(b for a,b in v))
PY
