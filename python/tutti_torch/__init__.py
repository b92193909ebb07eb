"""tutti as a torch.distributed backend.

    import tutti_torch  # registers "tutti"
    torch.distributed.init_process_group("tutti")

Collectives on CPU tensors run on tutti directly; CUDA tensors go to tutti's
stream-ordered device calls where PyTorch was built with CUDA, and are staged
through host memory where it was not. What it serves, beside gloo and NCCL:
the README's table.
"""
import atexit

import torch.distributed as dist

from . import _C

BACKEND = "tutti"


def _register():
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _C.create_process_group, devices=["cpu", "cuda"])


_register()
# Before Python finalizes: a call still completing then would free its
# tensors on a tutti thread that can no longer take the GIL (live_groups.h).
atexit.register(_C._quiesce_before_exit)


def version():
    """tutti's version as major * 10000 + minor * 100 + patch."""
    return _C.version()


def failed_ranks(group=None):
    """The ranks of `group` (the world by default, numbered as in it) that
    tutti named as failed: dead, stopped, or the cause of a failed call. What
    survivors pass to ``torch.distributed.shrink_group``."""
    import torch

    pg = group if group is not None else dist.group.WORLD
    return list(pg._get_backend(torch.device("cpu")).failed_ranks())
