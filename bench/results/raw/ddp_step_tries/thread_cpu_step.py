"""Step time of DDP and FSDP2 training the small transformer, tutti against
gloo in the same processes, passes alternating which goes first.

Run under torchrun (bench/torch_step_time.sh does, on one host and on
namespace nodes); rank 0 prints one JSON line per measurement:
  {"mode": "ddp"|"fsdp2", "backend": "tutti"|"gloo", "pass": p, "step_ms": t}
step_ms is the slowest rank's mean over the timed steps. Mode "compute"
(backend "none") runs the same steps with no communication at all: what is
left of a step above it is what the backend costs.
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti_torch  # noqa: F401  (registers "tutti")

sys.path.insert(0, "/work/main/tests/python")
from tiny_transformer import Config, batch, make_model, token_losses  # noqa: E402

# Large enough that the gradients (about 13 MB) are worth exchanging.
CONFIG = Config(vocab=1024, dim=256, heads=8, layers=4, seq=64)
ROWS_PER_RANK = 2
WARMUP, TIMED = 2, 6
PASSES = int(os.environ.get("TUTTI_BENCH_PASSES", "3"))


def wrap(mode, group):
    model = make_model(CONFIG)
    if mode == "compute":  # the same steps with no communication: the floor
        return model, model
    if mode == "ddp":
        return DDP(model, process_group=group), model
    mesh = DeviceMesh.from_group(group, "cpu")
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, model



def thread_cpu():
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/self/task"):
        try:
            s = open(f"/proc/self/task/{tid}/stat").read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        name = ("main" if int(tid) == os.getpid() else name)
        out[tid + ":" + name] = (int(f[11]) + int(f[12])) * 1000.0 / tick
        try:
            st = open(f"/proc/self/task/{tid}/status").read()
            v = int(st.split("voluntary_ctxt_switches:")[1].split()[0])
            out[tid + ":" + name + "-vcs"] = v
        except (OSError, IndexError):
            pass
    return out

def step_ms(mode, group, gloo):
    rank = dist.get_rank()
    runner, model = wrap(mode, group)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(i):
        inputs, targets = batch(CONFIG, i, rank, ROWS_PER_RANK)
        opt.zero_grad()
        token_losses(runner, inputs, targets).mean().backward()
        opt.step()

    for i in range(WARMUP):
        step(i)
    dist.barrier(group=gloo)
    before = thread_cpu()
    start = time.perf_counter()
    for i in range(TIMED):
        step(WARMUP + i)
    mine = torch.tensor([(time.perf_counter() - start) * 1000 / TIMED])
    after = thread_cpu()
    d = {}
    for k, v in after.items():
        n = k.split(":", 1)[1]
        d[n] = d.get(n, 0) + (v - before.get(k, 0)) / TIMED
    print("CPU", json.dumps({"rank": rank, "mode": mode, "backend": "tutti" if group is dist.group.WORLD else ("none" if group is None else "gloo"), "per_step_ms": {k: round(v, 1) for k, v in d.items() if v > 0}}), flush=True)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX, group=gloo)  # outside what is timed
    return mine.item()


def main():
    dist.init_process_group("tutti")
    gloo = dist.new_group(backend="gloo")
    groups = {"tutti": dist.group.WORLD, "gloo": gloo}
    params = sum(p.numel() for p in make_model(CONFIG).parameters())
    if dist.get_rank() == 0:
        print(json.dumps({"world": dist.get_world_size(), "parameters": params, "rows_per_rank": ROWS_PER_RANK,
                          "config": CONFIG.__dict__, "timed_steps": TIMED}), flush=True)
    # One untimed round first: the first model a process builds and trains
    # pays for memory and threads the later ones find ready.
    for mode in ("ddp", "fsdp2"):
        for backend in ("tutti", "gloo"):
            step_ms(mode, groups[backend], gloo)
    for p in range(PASSES):
        order = ["tutti", "gloo"] if p % 2 == 0 else ["gloo", "tutti"]
        ms = step_ms("compute", None, gloo)
        if dist.get_rank() == 0:
            print(json.dumps({"mode": "compute", "backend": "none", "pass": p, "step_ms": ms}), flush=True)
        for mode in ("ddp", "fsdp2"):
            for backend in order:
                ms = step_ms(mode, groups[backend], gloo)
                if dist.get_rank() == 0:
                    print(json.dumps({"mode": mode, "backend": backend, "pass": p, "step_ms": ms}), flush=True)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
