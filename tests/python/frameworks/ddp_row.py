"""DDP rows: PyTorch's DistributedDataParallel as its tutorials write it.

  torchrun --nproc_per_node N ddp_row.py [--amp]      (one torchrun per node)
  python ddp_row.py --spawn N [--amp]                 (torch.multiprocessing.spawn;
      across nodes, one per node with NNODES, NODE_RANK and MASTER_ADDR set)
--amp: torch.autocast on the CPU in bfloat16. See task.py for what is reported.
"""
import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

import task


def train(local_rank, nprocs, amp):
    if "RANK" not in os.environ:  # under spawn: the rank from the node's place and the child's index
        os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * nprocs + local_rank)
        os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    dist.init_process_group(task.backend())
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(task.make_model())
    data = task.Sequences()
    loader = DataLoader(data, batch_size=task.per_rank_batch(world), sampler=DistributedSampler(data, shuffle=False))
    opt = torch.optim.SGD(model.parameters(), lr=task.LR)
    record = task.Recorder(rank)
    for step, batch in enumerate(loader):
        batch = task.maybe_wrong(batch, step, rank)
        record.begin()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = model(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        record.end(loss)
    record.write(model.module.named_parameters())
    dist.destroy_process_group()
    task.leave()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--spawn", type=int, metavar="N", help="start N processes with mp.spawn")
    parser.add_argument("--amp", action="store_true")
    args = parser.parse_args()
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(free_port()))
        mp.spawn(train, args=(args.spawn, args.amp), nprocs=args.spawn)
    else:
        train(int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"]), args.amp)


if __name__ == "__main__":
    main()
