"""The Accelerate row: a training loop written as Accelerate's documentation
writes one (Accelerator, prepare, accelerator.backward), launched by
`accelerate launch --multi_gpu --num_processes N` (which starts torchrun).

On the CPU Accelerate initialises the process group itself with "gloo" (or
"mpi") whatever backend it is asked for: InitProcessGroupKwargs(backend="tutti")
is refused with "not available, please use gloo". What Accelerate does support
is a process group the script initialised before making the Accelerator: it
checks torch.distributed.is_initialized() and adopts that group (its
`state.backend` still reads "gloo"; the calls go to the default group, tutti).
That is what this row does; the row checks the group it trains on is tutti's.
"""
import os

import torch
import torch.distributed as dist
from accelerate import Accelerator
from torch.utils.data import DataLoader

import task


def main():
    backend = task.backend()
    if backend != "gloo":  # the baseline lets Accelerate initialise as it would anyway
        dist.init_process_group(backend)
    accelerator = Accelerator(cpu=True)
    assert dist.get_backend() == backend, f"Accelerate trains on {dist.get_backend()}, not {backend}"
    rank, world = accelerator.process_index, accelerator.num_processes
    model = task.make_model()
    opt = torch.optim.SGD(model.parameters(), lr=task.LR)
    loader = DataLoader(task.Sequences(), batch_size=task.per_rank_batch(world), shuffle=False)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    record = task.Recorder(rank)
    for step, batch in enumerate(loader):
        batch = task.maybe_wrong(batch, step, rank)
        record.begin()
        loss = model(**batch).loss
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        record.end(accelerator.reduce(loss.detach(), reduction="mean"))
    record.write(accelerator.unwrap_model(model).named_parameters())
    accelerator.end_training()
    if dist.is_initialized():
        dist.destroy_process_group()
    task.leave()


if __name__ == "__main__":
    main()
