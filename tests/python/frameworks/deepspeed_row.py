"""The DeepSpeed rows: deepspeed.initialize with a ZeRO stage, on the CPU
(DeepSpeed's CPU accelerator), dist_backend given to init_distributed as
DeepSpeed documents. Launched by `torchrun --nproc_per_node N`, which
init_distributed reads.

  deepspeed_row.py --stage 1|2|3

The optimizer is torch's SGD handed to deepspeed.initialize (DeepSpeed's own
CPU Adam would be compiled on first use); ZeRO takes a client optimizer with
zero_allow_untested_optimizer.
"""
import argparse

import deepspeed
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

import task


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stage", type=int, choices=[1, 2, 3], required=True)
    args = parser.parse_args()
    backend = task.backend()
    deepspeed.init_distributed(dist_backend=backend)
    rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    assert torch.distributed.get_backend() == backend, f"DeepSpeed trains on {torch.distributed.get_backend()}"
    per_rank = task.per_rank_batch(world)
    config = {"train_micro_batch_size_per_gpu": per_rank, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": args.stage}, "zero_allow_untested_optimizer": True,
              "steps_per_print": 10**9, "wall_clock_breakdown": False}
    model = task.make_model()
    opt = torch.optim.SGD(model.parameters(), lr=task.LR)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=config)
    data = task.Sequences()
    loader = DataLoader(data, batch_size=per_rank, sampler=DistributedSampler(data, shuffle=False))
    record = task.Recorder(rank)
    for step, batch in enumerate(loader):
        batch = task.maybe_wrong(batch, step, rank)
        record.begin()
        loss = engine(**batch).loss
        engine.backward(loss)
        engine.step()
        record.end(loss)
    # Under ZeRO-3 each rank holds a shard: every rank gathers the parameters together.
    with deepspeed.zero.GatheredParameters(list(engine.module.parameters()), enabled=args.stage == 3):
        record.write(engine.module.named_parameters())
    torch.distributed.destroy_process_group()
    task.leave()


if __name__ == "__main__":
    main()
