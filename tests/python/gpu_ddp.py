"""CUDA tensors through a torch.distributed backend, on ranks that may share
one GPU: collectives checked element by element against references each
rank computes alone, then DDP training whose per-step losses and final
parameters rank 0 writes as JSON, to be compared with another backend's run
(scripts/gpu/check.sh: gloo, "nccl" with tutti's libnccl.so.2 preloaded,
and "tutti").

    torchrun --nproc_per_node 2 gpu_ddp.py BACKEND OUT.json
"""
import faulthandler
import json
import os
import sys

import torch
import torch.distributed as dist


def inputs(rank, n, dtype, seed):
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    return torch.randint(-8, 9, (n,), generator=g).to(dtype)


def check(what, got, want):
    got, want = got.cpu(), want.cpu()
    if not torch.equal(got, want):
        bad = (got != want).nonzero()
        i = int(bad[0]) if bad.numel() else -1
        raise SystemExit(f"rank {dist.get_rank()}: {what}: {bad.numel()} wrong elements, first [{i}]: "
                         f"{got.flatten()[i].item()} want {want.flatten()[i].item()}")


def check_collectives(device, rank, world):
    # Small integers: every sum is exact in each dtype, so any order agrees.
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.float64):
        for n in (1, 1031, (1 << 20) + 3):
            t = inputs(rank, n, dtype, 1).to(device)
            dist.all_reduce(t)
            want = sum(inputs(r, n, dtype, 1).to(torch.float64) for r in range(world)).to(dtype)
            check(f"all_reduce {dtype} n={n}", t, want)
    n = 4099
    parts = [torch.empty(n, device=device) for _ in range(world)]
    dist.all_gather(parts, inputs(rank, n, torch.float32, 2).to(device))
    for r in range(world):
        check(f"all_gather part {r}", parts[r], inputs(r, n, torch.float32, 2))
    t = inputs(rank, n, torch.float32, 3).to(device)
    dist.broadcast(t, src=world - 1)
    check("broadcast", t, inputs(world - 1, n, torch.float32, 3))
    out = torch.empty(n, device=device)
    dist.reduce_scatter(out, [inputs(rank, n, torch.float32, 10 + r).to(device) for r in range(world)])
    check("reduce_scatter", out, sum(inputs(r, n, torch.float32, 10 + rank) for r in range(world)))


def train(device, rank, world, steps=20):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    losses = []
    for _ in range(steps):
        x = torch.randn(32, 64, generator=g).to(device)
        y = torch.randint(0, 8, (32,), generator=g).to(device)
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        losses.append(reduced.item() / world)
    params = [p.detach().double().cpu().flatten().tolist() for p in model.parameters()]
    return losses, params


def main():
    backend, out = sys.argv[1], sys.argv[2]
    # A hang shows where each rank is before the check's limit kills it.
    faulthandler.dump_traceback_later(float(os.environ.get("GPU_DDP_STACKS_AFTER", "45")), exit=False)
    if backend == "tutti":
        import tutti_torch  # noqa: F401  registers the backend
    device = torch.device("cuda", 0)  # every rank on the one GPU
    torch.cuda.set_device(device)
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if backend != "gloo":  # gloo is only the training's reference
        check_collectives(device, rank, world)
    losses, params = train(device, rank, world)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"backend": backend, "world": world, "losses": losses, "params": params}, f)
        print(f"{backend}: collectives right; losses {losses[0]:.6f} .. {losses[-1]:.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
