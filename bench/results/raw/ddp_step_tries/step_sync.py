# Diagnostic copy of bench/torch_step_time.py (stop 65): adds mode "sync" (no DDP, one 8-byte
# tutti all-reduce a step) and runs only compute, sync and DDP. See ../../ddp_step_tries.md.
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
    if mode in ("compute", "sync"):  # no communication (sync: one 8-byte all-reduce a step)
        return model, model
    if mode == "ddp":
        return DDP(model, process_group=group), model
    mesh = DeviceMesh.from_group(group, "cpu")
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, model


def step_ms(mode, group, gloo):
    rank = dist.get_rank()
    runner, model = wrap(mode, group)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(i):
        inputs, targets = batch(CONFIG, i, rank, ROWS_PER_RANK)
        opt.zero_grad()
        token_losses(runner, inputs, targets).mean().backward()
        if mode == "sync":
            dist.all_reduce(torch.zeros(2), group=group)
        opt.step()

    for i in range(WARMUP):
        step(i)
    dist.barrier(group=gloo)
    start = time.perf_counter()
    for i in range(TIMED):
        step(WARMUP + i)
    mine = torch.tensor([(time.perf_counter() - start) * 1000 / TIMED])
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
    for mode in ("ddp",):
        for backend in ("tutti", "gloo"):
            step_ms(mode, groups[backend], gloo)
    for p in range(PASSES):
        order = ["tutti", "gloo"] if p % 2 == 0 else ["gloo", "tutti"]
        ms = step_ms("compute", None, gloo)
        if dist.get_rank() == 0:
            print(json.dumps({"mode": "compute", "backend": "none", "pass": p, "step_ms": ms}), flush=True)
        ms = step_ms("sync", groups["tutti"], gloo)
        if dist.get_rank() == 0:
            print(json.dumps({"mode": "sync", "backend": "tutti", "pass": p, "step_ms": ms}), flush=True)
        for mode in ("ddp",):
            for backend in order:
                ms = step_ms(mode, groups[backend], gloo)
                if dist.get_rank() == 0:
                    print(json.dumps({"mode": mode, "backend": backend, "pass": p, "step_ms": ms}), flush=True)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
