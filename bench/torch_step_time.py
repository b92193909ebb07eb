"""Step time of DDP and FSDP2 training the small transformer, tutti against
gloo in the same processes, passes alternating which goes first.

Run under torchrun (bench/torch_step_time.sh does, on one host and on
namespace nodes); rank 0 prints one JSON line per measurement:
  {"mode": "ddp"|"fsdp2"|"allreduce", "backend": "tutti"|"gloo", "pass": p,
   "step_ms": t, "cpu_ms": c}
step_ms is the slowest rank's mean over the timed steps, cpu_ms the CPU time
a step summed over the ranks. Mode "compute" (backend "none") runs the same
steps with no communication at all: what is left of a step above it is what
the backend costs. Mode "ddp" with backend "noop" is DDP with PyTorch's
noop_hook (its buckets, copies and hooks, nothing sent): no backend's DDP step
can be shorter; backends "sync-tutti" and "sync-gloo" are DDP whose hook keeps
each bucket as it is after an all-reduce of one float on that backend: the
ranks wait for each other as they must, with no data. Mode "allreduce"
all-reduces the gradients' bytes (one flat tensor) a step with no compute:
what the call alone costs.
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.algorithms.ddp_comm_hooks.debugging_hooks import noop_hook
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti_torch  # noqa: F401  (registers "tutti")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from tiny_transformer import Config, batch, make_model, token_losses  # noqa: E402

# Large enough that the gradients (about 13 MB) are worth exchanging.
CONFIG = Config(vocab=1024, dim=256, heads=8, layers=4, seq=64)
ROWS_PER_RANK = 2
WARMUP, TIMED = 2, 6
PASSES = int(os.environ.get("TUTTI_BENCH_PASSES", "3"))


def sync_hook(group, bucket):
    """Keeps the bucket's own gradients but waits for every rank, through an
    all-reduce of one float: DDP's synchronisation without the data."""
    fut = dist.all_reduce(torch.zeros(1), group=group, async_op=True).get_future()
    return fut.then(lambda _: bucket.buffer())


def wrap(mode, group, hook=None):
    model = make_model(CONFIG)
    if mode == "compute":  # the same steps with no communication: the floor
        return model, model
    if mode == "ddp":
        ddp = DDP(model, process_group=group)
        if hook == "noop":  # DDP's own floor: its bucketing and hooks, no all-reduce
            ddp.register_comm_hook(None, noop_hook)
        elif hook == "sync":
            ddp.register_comm_hook(group, sync_hook)
        return ddp, model
    mesh = DeviceMesh.from_group(group, "cpu")
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, model


def step_ms(mode, group, gloo, hook=None):
    """The slowest rank's wall time a step, and the CPU time a step summed
    over the ranks (every thread of each process: the backend's too)."""
    rank = dist.get_rank()
    if mode == "allreduce":  # the gradients' bytes in one call a step, nothing else
        flat = torch.ones(sum(p.numel() for p in make_model(CONFIG).parameters()))

        def step(i):
            dist.all_reduce(flat, group=group)
    else:
        runner, model = wrap(mode, group, hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def step(i):
            inputs, targets = batch(CONFIG, i, rank, ROWS_PER_RANK)
            opt.zero_grad()
            token_losses(runner, inputs, targets).mean().backward()
            opt.step()

    for i in range(WARMUP):
        step(i)
    dist.barrier(group=gloo)
    start, cpu_start = time.perf_counter(), time.process_time()
    for i in range(TIMED):
        step(WARMUP + i)
    wall = torch.tensor([(time.perf_counter() - start) * 1000 / TIMED])
    cpu = torch.tensor([(time.process_time() - cpu_start) * 1000 / TIMED])
    dist.all_reduce(wall, op=dist.ReduceOp.MAX, group=gloo)  # outside what is timed
    dist.all_reduce(cpu, group=gloo)
    return wall.item(), cpu.item()


def report(mode, backend, p, times):
    if dist.get_rank() == 0:
        print(json.dumps({"mode": mode, "backend": backend, "pass": p, "step_ms": times[0],
                          "cpu_ms": times[1]}), flush=True)


def main():
    # The cores the job's ranks share, read before tutti's init binds each
    # namespace node's ranks to its share of them (TUTTI_NODE_CORES).
    cores = len(os.sched_getaffinity(0))
    dist.init_process_group("tutti")
    gloo = dist.new_group(backend="gloo")
    groups = {"tutti": dist.group.WORLD, "gloo": gloo}
    params = sum(p.numel() for p in make_model(CONFIG).parameters())
    if dist.get_rank() == 0:
        print(json.dumps({"world": dist.get_world_size(), "parameters": params, "rows_per_rank": ROWS_PER_RANK,
                          "cores": cores,
                          "config": CONFIG.__dict__, "timed_steps": TIMED}), flush=True)
    # One untimed round first: the first model a process builds and trains
    # pays for memory and threads the later ones find ready.
    for mode in ("ddp", "fsdp2"):
        for backend in ("tutti", "gloo"):
            step_ms(mode, groups[backend], gloo)
    for p in range(PASSES):
        order = ["tutti", "gloo"] if p % 2 == 0 else ["gloo", "tutti"]
        report("compute", "none", p, step_ms("compute", None, gloo))
        report("ddp", "noop", p, step_ms("ddp", groups["tutti"], gloo, hook="noop"))
        for backend in order:
            report("ddp", "sync-" + backend, p, step_ms("ddp", groups[backend], gloo, hook="sync"))
        for mode in ("ddp", "fsdp2", "allreduce"):
            for backend in order:
                report(mode, backend, p, step_ms(mode, groups[backend], gloo))
    dist.barrier(group=gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
