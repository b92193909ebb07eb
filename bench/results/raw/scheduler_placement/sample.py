# Samples the core of each tutti-perf rank (RANK in its environment) every 5 ms until they exit (sampled.sh).
# Prints: the share of samples where ranks 0,1 share a CPU and 2,3 share one ("same"),
# where neither pair does ("split"), and mixed.
import os, time
def ranks():
    found = {}
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try:
            if not os.readlink(f'/proc/{p}/exe').endswith('tutti-perf'): continue
            env = open(f'/proc/{p}/environ', 'rb').read().split(b'\0')
            for e in env:
                if e.startswith(b'RANK='): found[int(e[5:])] = p
        except OSError: pass
    return found
deadline = time.time() + 10
while len(r := ranks()) < 4 and time.time() < deadline: time.sleep(0.01)
counts = {'same': 0, 'split': 0, 'mixed': 0}
while True:
    cpus = {}
    try:
        for k, p in r.items():
            cpus[k] = int(open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[36])
    except OSError: break
    a, b = cpus[0] == cpus[1], cpus[2] == cpus[3]
    counts['same' if a and b else 'split' if not a and not b else 'mixed'] += 1
    time.sleep(0.005)
n = sum(counts.values()) or 1
print(' '.join(f"{k} {v / n:.2f}" for k, v in counts.items()), f"({n} samples)")
