"""torch.distributed.checkpoint saves FSDP2-sharded state on one number of
ranks and loads it on another, over tutti.

    TUTTI_DCP_PHASE=save TUTTI_DCP_DIR=D   (torchrun, e.g. 4 processes)
        trains the small transformer one step under FSDP2, saves the model's
        and the optimizer's sharded state with dcp.save, and rank 0 writes the
        whole parameters (D/whole.pt) to compare against;
    TUTTI_DCP_PHASE=load TUTTI_DCP_DIR=D   (e.g. 2 processes)
        builds the model from another seed, shards it, loads with dcp.load:
        every parameter, and the optimizer's momentum, must equal what was saved.
tests/python/dcp_test.sh runs both.
"""
import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import tutti_torch  # noqa: F401  (registers "tutti")
from run_outcome import finish
from tiny_transformer import Config, batch, make_model, token_losses


def sharded_model(seed):
    model = make_model(Config(), seed=seed)
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def whole(state):
    return {k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone() for k, v in state.items()}


def main():
    phase, folder = os.environ["TUTTI_DCP_PHASE"], os.environ["TUTTI_DCP_DIR"]
    dist.init_process_group("tutti")
    rank, world = dist.get_rank(), dist.get_world_size()
    failures = []
    if phase == "save":
        model, opt = sharded_model(seed=0)
        inputs, targets = batch(Config(), 0, rank, 4)
        token_losses(model, inputs, targets).mean().backward()
        opt.step()
        model_state, opt_state = get_state_dict(model, opt)
        dcp.save({"model": model_state, "optim": opt_state}, checkpoint_id=folder)
        momentum = {k: opt.state[p]["momentum_buffer"] for k, p in model.named_parameters()}
        reference = {"params": whole(dict(model.named_parameters())), "momentum": whole(momentum)}
        if rank == 0:
            torch.save(reference, os.path.join(folder, "whole.pt"))
    else:
        model, opt = sharded_model(seed=1)  # other values, to be overwritten
        # get_state_dict gives the optimizer state (momentum) for dcp.load to fill.
        model_state, opt_state = get_state_dict(model, opt)
        state = {"model": model_state, "optim": opt_state}
        dcp.load(state, checkpoint_id=folder)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        saved = torch.load(os.path.join(folder, "whole.pt"))
        params = whole(dict(model.named_parameters()))
        for name, want in saved["params"].items():
            if not torch.equal(params[name], want):
                failures.append(f"parameter {name} after dcp.load differs from the saved one by "
                                f"{(params[name] - want).abs().max().item():.3g}")
        for name, p in model.named_parameters():
            got = opt.state.get(p, {}).get("momentum_buffer")
            got = got.full_tensor() if hasattr(got, "full_tensor") else got
            if got is None or not torch.equal(got, saved["momentum"][name]):
                failures.append(f"the optimizer's momentum for {name} was not restored")
    finish(failures, f"dcp {phase} on {world} processes: the state matches")


if __name__ == "__main__":
    main()
