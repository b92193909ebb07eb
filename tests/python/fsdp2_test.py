"""FSDP2 (fully_shard) trains a small transformer on tutti, and its parameters
equal a single-process run on the same global batch.

Run under torchrun (any number of ranks, one host or several). Two ways of
reducing gradients, as FSDP2 issues them:
  avg      each rank's loss is the mean over its rows; FSDP2 reduce-scatters
           with ReduceOp.AVG
  premul   each rank's loss is the sum over its rows, and the divide factor is
           the global batch's rows; FSDP2 reduce-scatters with
           PREMUL_SUM(1 / rows)
After STEPS steps of SGD every parameter must be within TOLERANCE of the
reference (the same model trained in this process on the whole global batch:
the sums come in another order, nothing else differs). With
TUTTI_DETERMINISTIC=1 a second run must give the same bits; rank 0 writes
their digests to TUTTI_FSDP2_DIGEST_FILE where set, for another launch to
compare (fsdp2_twice.sh).

The same training on a gloo group is run and its outcome printed, not
asserted (PyTorch issue 162338: gloo's AVG in this path).
"""
import hashlib
import json
import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard

import tutti_torch  # noqa: F401  (registers "tutti")
from run_outcome import finish
from tiny_transformer import Config, batch, global_batch, make_model, token_losses

STEPS = 3
ROWS_PER_RANK = 4
LR = 0.5
# float32 sums of the same terms in another order: relative error a few ulps
# per step, grown by the updates; measured differences are below 1e-6.
TOLERANCE = 2e-5


def reference(config, world, mode):
    model = make_model(config)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(STEPS):
        inputs, targets = global_batch(config, step, world, ROWS_PER_RANK)
        opt.zero_grad()
        token_losses(model, inputs, targets).mean().backward()
        opt.step()
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def train_fsdp2(config, group, mode):
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    mesh = DeviceMesh.from_group(group, "cpu")
    model = make_model(config)
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if mode == "premul":  # per sharded module: each reduces its own gradients
        for module in [*model.blocks, model]:
            module.set_gradient_divide_factor(float(world * ROWS_PER_RANK))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(STEPS):
        inputs, targets = batch(config, step, rank, ROWS_PER_RANK)
        opt.zero_grad()
        losses = token_losses(model, inputs, targets)
        (losses.mean() if mode == "avg" else losses.sum()).backward()
        opt.step()
    return {name: p.full_tensor().detach().clone() for name, p in model.named_parameters()}


class ReduceOpsSeen:
    """The reduce ops FSDP2 hands dist.reduce_scatter_single, so the test
    knows AVG and PREMUL_SUM were what the backend ran."""

    def __init__(self):
        self.ops = set()
        self._original = dist.reduce_scatter_single

        def recording(*args, **kwargs):
            op = kwargs.get("op")
            self.ops.add(str(getattr(op, "op", op)).rsplit(".", 1)[-1])
            return self._original(*args, **kwargs)

        dist.reduce_scatter_single = recording


def worst_difference(got, want):
    return max((got[n] - want[n]).abs().max().item() for n in want)


def main():
    dist.init_process_group("tutti")
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    config = Config()
    failures, report, digests = [], {}, {}
    deterministic = os.environ.get("TUTTI_DETERMINISTIC") == "1"
    seen = ReduceOpsSeen()
    for mode, op in (("avg", "AVG"), ("premul", "PREMUL_SUM")):
        want = reference(config, world, mode)
        seen.ops.clear()
        got = train_fsdp2(config, dist.group.WORLD, mode)
        if seen.ops != {op}:
            failures.append(f"tutti {mode}: FSDP2 reduce-scattered with {sorted(seen.ops)}, not {op}")
        digests[mode] = hashlib.sha256(b"".join(got[n].numpy().tobytes() for n in sorted(got))).hexdigest()
        diff = worst_difference(got, want)
        report[f"tutti {mode}"] = diff
        if not diff <= TOLERANCE:
            failures.append(f"tutti {mode}: a parameter is {diff:.3g} from the reference (tolerance {TOLERANCE})")
        if deterministic:
            again = train_fsdp2(config, dist.group.WORLD, mode)
            if any(not torch.equal(again[n], got[n]) for n in got):
                failures.append(f"tutti {mode}: TUTTI_DETERMINISTIC=1 and a second run gave other bits")
        try:
            report[f"gloo {mode}"] = worst_difference(train_fsdp2(config, gloo, mode), want)
        except Exception as e:  # noqa: BLE001  (recorded, not asserted)
            report[f"gloo {mode}"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    if rank == 0 and os.environ.get("TUTTI_FSDP2_DIGEST_FILE"):
        with open(os.environ["TUTTI_FSDP2_DIGEST_FILE"], "w") as f:  # for a second launch to compare
            json.dump(digests, f, sort_keys=True)
    if rank == 0:
        print("fsdp2 " + json.dumps({"world": world, "steps": STEPS, "tolerance": TOLERANCE,
                                     "deterministic": deterministic, "largest difference from the reference": report}))
    finish(failures, f"FSDP2 matches the single-process run ({world} processes)")


if __name__ == "__main__":
    main()
