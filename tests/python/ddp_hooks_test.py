"""DDP with communication hooks and static_graph gives gloo's results on tutti.

Run under torchrun. The small transformer trains for STEPS steps under DDP
on a tutti group and on a gloo group in the same processes, the same data on
both; the losses and final parameters must agree, for: plain DDP,
static_graph, the fp16 and bf16 compression hooks, and PowerSGD (rank 1,
error feedback, warm start, compressing from step 2: its random projections
come from the same seed on both).
"""
import faulthandler
import os

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti_torch  # noqa: F401  (registers "tutti")
from run_outcome import finish
from tiny_transformer import Config, batch, make_model, token_losses

STEPS = 4
ROWS_PER_RANK = 4
# Both backends sum the same values; with more than two ranks in another
# order. float32 rounding stays near 1e-7; the compression hooks sum in fp16
# or bf16, whose rounding (1e-3, 8e-3 relative) reaches the parameters
# through the learning rate.
TOLERANCE = {"plain": 1e-5, "static_graph": 1e-5, "fp16": 1e-3, "bf16": 1e-2, "powersgd": 1e-4}


def train(group, variant):
    rank = dist.get_rank()
    config = Config()
    model = make_model(config)
    ddp = DDP(model, process_group=group, static_graph=(variant == "static_graph"))
    if variant == "fp16":
        ddp.register_comm_hook(group, default_hooks.fp16_compress_hook)
    elif variant == "bf16":
        ddp.register_comm_hook(group, default_hooks.bf16_compress_hook)
    elif variant == "powersgd":
        state = powersgd.PowerSGDState(process_group=group, matrix_approximation_rank=1,
                                       start_powerSGD_iter=2, use_error_feedback=True, warm_start=True,
                                       random_seed=7)
        ddp.register_comm_hook(state, powersgd.powerSGD_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.2)
    losses = []
    for step in range(STEPS):
        inputs, targets = batch(config, step, rank, ROWS_PER_RANK)
        opt.zero_grad()
        loss = token_losses(ddp, inputs, targets).mean()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses), {n: p.detach().clone() for n, p in model.named_parameters()}


def main():
    # A hang shows every thread's stack and fails, before ctest's timeout.
    faulthandler.dump_traceback_later(int(os.environ.get("TUTTI_TEST_HANG_SECONDS", "400")), exit=True)
    dist.init_process_group("tutti")
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    failures = []
    only = os.environ.get("TUTTI_TEST_VARIANTS")
    for variant, tolerance in TOLERANCE.items():
        if only and variant not in only.split(","):
            continue
        tutti_losses, tutti_params = train(dist.group.WORLD, variant)
        gloo_losses, gloo_params = train(gloo, variant)
        worst = max((tutti_params[n] - gloo_params[n]).abs().max().item() for n in gloo_params)
        loss_gap = (tutti_losses - gloo_losses).abs().max().item()
        if not (worst <= tolerance and loss_gap <= tolerance):
            failures.append(f"{variant}: parameters differ from gloo's by {worst:.3g}, losses by {loss_gap:.3g} "
                            f"(tolerance {tolerance})")
        # The step changed the parameters: a hook that dropped the gradients
        # would agree with gloo only if gloo dropped them too.
        untrained = make_model(Config())
        moved = max((tutti_params[n] - p).abs().max().item() for n, p in untrained.named_parameters())
        if moved < 1e-4:
            failures.append(f"{variant}: training left the parameters where they started")
        if rank == 0:
            print(f"{variant}: largest parameter difference from gloo {worst:.3g}, loss {loss_gap:.3g}")
    finish(failures, f"every DDP variant matches gloo ({world} processes)")


if __name__ == "__main__":
    main()
