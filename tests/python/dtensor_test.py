"""DTensor, tensor parallelism and a compiled DDP model on tutti (4 ranks).

Run under torchrun with 4 processes. On a 2 x 2 DeviceMesh ("dp", "tp"),
every group tutti serves:
  - an MLP with ColwiseParallel then RowwiseParallel over "tp" gives the
    unsharded MLP's output and gradients;
  - redistribute between Shard, Replicate and Partial placements gives back
    the tensor it was made from (Partial: the sum over the mesh dimension);
  - a DDP model over "dp", compiled with torch.compile, trains to the same
    parameters as the same model uncompiled.
"""
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti_torch  # noqa: F401  (registers "tutti")
from run_outcome import finish

failures = []


def expect_close(what, got, want, tolerance=1e-5):
    if got.shape != want.shape or not torch.allclose(got, want, rtol=tolerance, atol=tolerance):
        worst = (got - want).abs().max().item() if got.shape == want.shape else "shape"
        failures.append(f"{what}: differs by {worst} (shape {tuple(got.shape)}, want {tuple(want.shape)})")


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def check_tensor_parallel(mesh):
    tp = mesh["tp"]
    local, parallel = MLP(), MLP()
    parallelize_module(parallel, tp, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    dp_rank = mesh["dp"].get_local_rank()
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(10 + dp_rank))
    want = local(x)
    got = parallel(x)
    expect_close("ColwiseParallel+RowwiseParallel output", got, want)
    want.sum().backward()
    got.sum().backward()
    for name, p in local.named_parameters():
        g = dict(parallel.named_parameters())[name].grad
        g = g.full_tensor() if isinstance(g, DTensor) else g
        expect_close(f"tensor-parallel gradient of {name}", g, p.grad)


def check_redistribute(mesh, rank):
    full = torch.arange(8 * 6, dtype=torch.float32).reshape(8, 6)
    sharded = distribute_tensor(full, mesh, [Shard(0), Replicate()])
    expect_close("distribute_tensor's local shard", sharded.to_local(), full.chunk(2)[mesh["dp"].get_local_rank()])
    for placements in ([Replicate(), Shard(1)], [Shard(1), Shard(0)], [Replicate(), Replicate()]):
        moved = sharded.redistribute(mesh, placements)
        expect_close(f"redistribute to {placements}, whole", moved.full_tensor(), full)
    # Partial over "tp": each rank holds a part; the replicated tensor is their sum.
    part = torch.full((3, 3), float(rank + 1))
    partial = DTensor.from_local(part, mesh, [Replicate(), Partial()])
    tp_ranks = mesh["tp"].mesh.tolist()
    want = torch.full((3, 3), float(sum(r + 1 for r in tp_ranks)))
    expect_close("Partial to Replicate (sum over tp)", partial.redistribute(mesh, [Replicate(), Replicate()]).to_local(),
                 want)


def check_compiled_ddp(mesh):
    dp = mesh["dp"].get_group()

    def train(compiled):
        model = MLP()
        ddp = DDP(model, process_group=dp)
        step = torch.compile(ddp) if compiled else ddp
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(100 + dist.get_rank(dp))
        for _ in range(3):
            x, y = torch.randn(8, 16, generator=g), torch.randn(8, 8, generator=g)
            opt.zero_grad()
            nn.functional.mse_loss(step(x), y).backward()
            opt.step()
        return {n: p.detach().clone() for n, p in model.named_parameters()}

    eager, compiled = train(False), train(True)
    for name in eager:
        expect_close(f"compiled DDP parameter {name}", compiled[name], eager[name])


def main():
    dist.init_process_group("tutti")
    rank, world = dist.get_rank(), dist.get_world_size()
    if world != 4:
        sys.exit(f"dtensor_test.py runs on 4 processes, not {world}")
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    for dim in ("dp", "tp"):
        if dist.get_backend(mesh[dim].get_group()) != "tutti":
            failures.append(f"the mesh's {dim} group runs on {dist.get_backend(mesh[dim].get_group())}, not tutti")
    for check in (lambda: check_tensor_parallel(mesh), lambda: check_redistribute(mesh, rank),
                  lambda: check_compiled_ddp(mesh)):
        check()
    finish(failures, "DTensor, tensor parallelism and compiled DDP give the local results")


if __name__ == "__main__":
    main()
