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


def grow(new_size, store, key, group=None):
    """Grows `group` (the world by default) to `new_size` ranks, as
    ``tuttiCommGrow`` does; PyTorch has no grow of its own. Every member
    calls it and keeps its rank; each new process calls :func:`join_grown`
    with the same store and key, taking ranks ``group.size()`` to
    ``new_size - 1``. The store carries the grow's id from rank 0 to the new
    processes, so it must be one they reach too (a ``TCPStore`` client of
    the job's), and `key` must name this grow alone.

    Returns the grown group as a ``ProcessGroup`` of its own, which
    collectives take as ``group=`` and DDP as ``process_group=``;
    torch.distributed's default group stays what it was."""
    import torch

    pg = group if group is not None else dist.group.WORLD
    backend = pg._get_backend(torch.device("cpu")).grow(new_size, store, key)
    return _named_group_of(backend, store, key)


def join_grown(store, key, rank, new_size, timeout=None):
    """A new process's side of :func:`grow`: waits (up to the store's
    timeout) for the grow's id under `key`, joins as `rank`, and returns the
    grown group."""
    import datetime

    timeout = timeout or datetime.timedelta(minutes=10)
    return _named_group_of(_C.join_grown(store, key, rank, new_size, timeout), store, key)


def _group_of(backend, store):
    """A ProcessGroup over `store` that serves both devices with `backend`,
    as init_process_group("tutti") makes (tutti_torch.torchft's too)."""
    import torch

    custom = dist.ProcessGroup.BackendType.CUSTOM
    pg = dist.ProcessGroup(store, backend.rank(), backend.size())
    for device in ("cpu", "cuda"):
        pg._register_backend(torch.device(device), custom, backend)
    pg._set_default_backend(custom)
    return pg


def _named_group_of(backend, store, name):
    pg = _group_of(backend, dist.PrefixStore(name + "/", store))
    pg._set_group_name(name)
    return pg
