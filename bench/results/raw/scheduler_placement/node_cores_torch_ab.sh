#!/usr/bin/env bash
# DDP and FSDP2 steps of bench/torch_step_time.py on 2 namespace nodes x 2
# ranks, TUTTI_NODE_CORES=0 and 1 alternated (gloo runs in the same
# processes, so it is bound too where tutti binds); then each setting's
# medians and tutti / gloo per pass. ROUNDS and PASSES change the counts.
cd "$(dirname "$0")/../../../.."
out=${OUT:-/tmp/node_cores_torch_ab}
mkdir -p "$out"
python=$PWD/.venv/bin/python
export PYTHONPATH=$PWD/build/python TUTTI_BENCH_PASSES=${PASSES:-3}
tests/multinode/netns.sh up 2 tutti-st >/dev/null
for round in $(seq 1 "${ROUNDS:-3}"); do
  for v in 0 1; do
    TUTTI_NODE_CORES=$v tests/python/run_torchrun_nodes.sh "$python" 2 2 "$PWD/bench/torch_step_time.py" tutti-st 2>&1 |
      sed -n 's/^\[node 0\] \(\[default0\]:\)\?\({.*}\)$/\2/p' >"$out/v$v.$round.jsonl"
  done
done
tests/multinode/netns.sh down 2 tutti-st >/dev/null
python3 - "$out" <<'PY'
import glob, json, statistics as st, sys
for v in (0, 1):
    rows = [json.loads(l) for f in sorted(glob.glob(f"{sys.argv[1]}/v{v}.*.jsonl")) for l in open(f)]
    rows = [d for d in rows if "mode" in d]
    get = lambda mode, backend: [d["step_ms"] for d in rows if d["mode"] == mode and d["backend"] == backend]
    out = []
    for mode in ("ddp", "fsdp2"):
        t, g = get(mode, "tutti"), get(mode, "gloo")
        r = [a / b for a, b in zip(t, g)]
        out.append(f"{mode}: tutti {st.median(t):.0f} ms, gloo {st.median(g):.0f}, tutti / gloo {st.median(r):.3f} ({min(r):.2f}-{max(r):.2f})")
    out.append(f"all-reduce alone: tutti {st.median(get('allreduce', 'tutti')):.1f} ms, gloo {st.median(get('allreduce', 'gloo')):.1f}; "
               f"compute {st.median(get('compute', 'none')):.0f}, DDP sending nothing {st.median(get('ddp', 'noop')):.0f}")
    print(f"TUTTI_NODE_CORES={v}: " + "; ".join(out))
PY
