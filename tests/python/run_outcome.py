"""How a test run under torchrun ends: every rank meets the others, lets the
process group go, then prints its failures and exits 1, or its success line."""
import sys

import torch.distributed as dist


def finish(failures, success):
    rank = dist.get_rank()
    dist.barrier()
    dist.destroy_process_group()
    for f in failures:
        print(f"rank {rank}: FAIL {f}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"rank {rank}: {success}")
