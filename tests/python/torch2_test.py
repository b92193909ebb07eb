"""What PyTorch 2.x asks of a backend beyond the collectives, on "tutti".

Run under torchrun (tests/python/run_torchrun.sh) with TUTTI_TEST_INIT naming
how the default group is made:
  tutti        init_process_group("tutti")
  per-device   init_process_group("cpu:tutti,cuda:tutti")
  device-id    init_process_group("tutti", device_id=cpu:0), eager init
  device-id-cuda   the same with this rank's GPU (the GPU check runs it), and
               an all_reduce of CUDA tensors
Checked: the backend serves both devices; new_group with members and
non-members; split_group; sequence numbers; the options PyTorch reads;
abort and shutdown (a call blocked on a rank that never comes fails at once
on abort, and a group shut down refuses later calls, naming itself);
functional collectives; tutti_torch's grow refusing what cannot be.
"""
import copy
import os
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import tutti_torch  # noqa: F401  (registers "tutti")
from run_outcome import finish

failures = []


def fail(what):
    failures.append(what)


def expect(what, got, want):
    if isinstance(got, torch.Tensor):
        if got.dtype != want.dtype or not torch.equal(got, want):
            fail(f"{what}: got {got.tolist()}, want {want.tolist()}")
    elif got != want:
        fail(f"{what}: got {got!r}, want {want!r}")


def ranks_sum(ranks, scale=1.0):
    return float(sum(r + 1 for r in ranks)) * scale


def check_devices(mode):
    pg = dist.group.WORLD
    want = "cpu:tutti,cuda:tutti" if mode == "per-device" else "tutti"
    got = dist.get_backend()
    expect("dist.get_backend()", got, want)
    # Both devices map to tutti, whichever way the group was named.
    expect("get_backend_config()", dist.get_backend_config(), "cpu:tutti,cuda:tutti")
    for device in ("cpu", "cuda"):
        backend = pg._get_backend(torch.device(device))
        expect(f"the {device} backend's name", backend.name(), "tutti")
    if mode == "device-id":
        expect("bound_device_id", pg.bound_device_id, torch.device("cpu", 0))
    if mode == "device-id-cuda":
        device = cuda_device()
        expect("bound_device_id", pg.bound_device_id, device)
        t = torch.full((1000,), float(dist.get_rank() + 1), device=device)
        dist.all_reduce(t)
        expect("all_reduce of CUDA tensors", t.cpu(), torch.full((1000,), ranks_sum(range(dist.get_world_size()))))


def cuda_device():
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())


def check_options(world):
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    options = backend.options
    expect("options.backend", options.backend, "tutti")
    expect("options._timeout", options._timeout, timedelta(seconds=int(os.environ.get("TUTTI_TEST_TIMEOUT", "60"))))
    # split_group copies them with copy.deepcopy (PyTorch 2.11: "cannot
    # pickle ... Options" on an H200's PyTorch).
    copied = copy.deepcopy(options)
    expect("deepcopy(options).backend", copied.backend, "tutti")
    expect("deepcopy(options)._timeout", copied._timeout, options._timeout)
    expect("deepcopy(options) is a copy", copied is options, False)
    expect("supports_splitting", backend.supports_splitting, True)
    expect("supports_coalescing", backend.supports_coalescing, True)
    expect("backend size", backend.size(), world)


def check_new_group(rank, world, local_sync=False):
    """With use_local_synchronization only the members call it, and PyTorch
    then counts groups differently on members and the rest: it comes last."""
    members = list(range(0, world, 2))  # every other rank
    if local_sync and rank not in members:
        return
    group = dist.new_group(members, backend="tutti", use_local_synchronization=local_sync)
    if rank in members:
        t = torch.full((5,), float(rank + 1))
        dist.all_reduce(t, group=group)
        expect(f"all_reduce on new_group({members}, local sync {local_sync})", t,
               torch.full((5,), ranks_sum(members)))
        expect("its size", dist.get_world_size(group), len(members))
        expect("its rank", dist.get_rank(group), members.index(rank))
    else:
        expect(f"new_group({members}) on a non-member", group, dist.GroupMember.NON_GROUP_MEMBER)
        expect("rank in a group it is not in", dist.get_rank(group), -1)


def check_split_group(rank, world):
    halves = [list(range(0, world // 2)), list(range(world // 2, world))]
    group = dist.split_group(split_ranks=halves, timeout=timedelta(seconds=60))
    mine = halves[0] if rank in halves[0] else halves[1]
    t = torch.full((3,), float(rank + 1))
    dist.all_reduce(t, group=group)
    expect(f"all_reduce on split_group half {mine}", t, torch.full((3,), ranks_sum(mine)))
    expect("split group size", dist.get_world_size(group), len(mine))
    # A split that leaves some ranks out, twice: each is a split of its own.
    only = [[0, world - 1]] if world > 2 else [[0]]
    for _ in range(2):
        sub = dist.split_group(split_ranks=only)
        if rank in only[0]:
            t = torch.full((2,), float(rank + 1))
            dist.all_reduce(t, group=sub)
            expect(f"all_reduce on split_group {only[0]}", t, torch.full((2,), ranks_sum(only[0])))
        else:
            # PyTorch 2.11 answers None here (H200 run 9), later ones NON_GROUP_MEMBER.
            if sub is not None:
                expect(f"split_group({only}) on a non-member", sub, dist.GroupMember.NON_GROUP_MEMBER)
        del sub
    dist.barrier()


def sequence_number(group):
    try:
        return group._get_sequence_number_for_group()
    except RuntimeError as e:
        # Some 2.x releases (2.11 on an H200) ask only gloo, NCCL and UCC at
        # the group; the backend answers for itself.
        if "does not yet support sequence numbers" not in str(e):
            raise
        return group._get_backend(torch.device("cpu"))._get_sequence_number_for_group()


def check_sequence_numbers(rank, world):
    group = dist.new_group(backend="tutti")
    before = sequence_number(group)
    for _ in range(3):
        dist.all_reduce(torch.ones(4), group=group)
    dist.broadcast(torch.ones(2), src=0, group=group)
    after = sequence_number(group)
    expect("sequence number after 4 calls", after - before, 4)
    # Every rank has counted the same calls.
    numbers = [None] * world
    dist.all_gather_object(numbers, after)
    expect("sequence numbers across ranks", len(set(numbers)), 1)


def check_functional(rank, world):
    t = torch.arange(4, dtype=torch.float32) + rank
    got = funcol.all_reduce(t, "sum", dist.group.WORLD)
    want = torch.arange(4, dtype=torch.float32) * world + sum(range(world))
    expect("funcol.all_reduce", got.wait() if hasattr(got, "wait") else torch.as_tensor(got), want)
    gathered = funcol.all_gather_tensor(torch.full((2,), float(rank)), 0, dist.group.WORLD)
    expect("funcol.all_gather_tensor", torch.as_tensor(gathered),
           torch.tensor([float(r) for r in range(world) for _ in range(2)]))
    scattered = funcol.reduce_scatter_tensor(torch.arange(world * 2, dtype=torch.float32), "sum", 0,
                                             dist.group.WORLD)
    expect("funcol.reduce_scatter_tensor", torch.as_tensor(scattered),
           torch.tensor([2.0 * rank, 2.0 * rank + 1]) * world)


def check_abort(rank, world):
    """A call waits for the last rank, which never makes it; abort, from
    another thread, ends that wait at once with an error."""
    group = dist.new_group(backend="tutti", timeout=timedelta(seconds=60))
    late = world - 1
    if rank == late:
        dist.barrier()  # the others have aborted
        return
    t = torch.ones(8)
    work = dist.all_reduce(t, group=group, async_op=True)
    backend = group._get_backend(torch.device("cpu"))
    timer = threading.Timer(1.0, backend.abort)
    start = time.monotonic()
    timer.start()
    try:
        work.wait()
        fail("all_reduce completed after abort, with a rank missing")
    except Exception as e:  # noqa: BLE001
        took = time.monotonic() - start
        if took > 20:
            fail(f"the wait ended {took:.1f} s after the abort")
        if "abort" not in str(e).lower():
            fail(f"after abort the call said {str(e)!r}, which does not say it was aborted")
    try:
        dist.all_reduce(torch.ones(2), group=group)
        fail("a call on an aborted group succeeded")
    except Exception as e:  # noqa: BLE001
        if "abort" not in str(e).lower():
            fail(f"a call on an aborted group said {str(e)!r}")
    dist.barrier()


def check_shutdown(rank, world):
    group = dist.new_group(backend="tutti")
    t = torch.full((4,), float(rank + 1))
    work = dist.all_reduce(t, group=group, async_op=True)
    backend = group._get_backend(torch.device("cpu"))
    backend.shutdown()  # finishes what was issued
    if not work.is_completed():
        fail("shutdown returned before the call issued before it completed")
    expect("the call issued before shutdown", t, torch.full((4,), ranks_sum(range(world))))
    try:
        dist.all_reduce(torch.ones(2), group=group)
        fail("a call after shutdown succeeded")
    except Exception as e:  # noqa: BLE001
        if "shut down" not in str(e):
            fail(f"a call after shutdown said {str(e)!r}")
    dist.barrier()


def check_grow_refusals(rank, world):
    """tutti_torch.grow and join_grown refuse a size or rank that cannot be
    at once, saying why, before any rank waits (the positive case:
    shrink_train.py)."""
    store = dist.HashStore()
    cases = (("a grow to the group's own size", lambda: tutti_torch.grow(world, store, "g"), "has 4 already"),
             ("joining as rank 0", lambda: tutti_torch.join_grown(store, "g", 0, world + 1), "not 0"),
             ("joining past the new size", lambda: tutti_torch.join_grown(store, "g", world + 1, world + 1),
              f"not {world + 1}"))
    for what, call, says in cases:
        t0 = time.monotonic()
        try:
            call()
            fail(f"{what} was not refused")
        except Exception as e:  # noqa: BLE001
            if says.replace("4", str(world)) not in str(e):
                fail(f"{what}: the refusal says {str(e)!r}, not {says!r}")
        if time.monotonic() - t0 > 5:
            fail(f"{what}: refused only after {time.monotonic() - t0:.1f} s")
    dist.barrier()


def main():
    mode = os.environ.get("TUTTI_TEST_INIT", "tutti")
    timeout = timedelta(seconds=int(os.environ.get("TUTTI_TEST_TIMEOUT", "60")))
    if mode == "per-device":
        dist.init_process_group("cpu:tutti,cuda:tutti", timeout=timeout)
    elif mode == "device-id":
        dist.init_process_group("tutti", timeout=timeout, device_id=torch.device("cpu", 0))
    elif mode == "device-id-cuda":
        torch.cuda.set_device(cuda_device())
        dist.init_process_group("tutti", timeout=timeout, device_id=cuda_device())
    else:
        dist.init_process_group("tutti", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    for check in (lambda: check_devices(mode), lambda: check_options(world), lambda: check_new_group(rank, world),
                  lambda: check_split_group(rank, world), lambda: check_sequence_numbers(rank, world),
                  lambda: check_functional(rank, world), lambda: check_abort(rank, world),
                  lambda: check_shutdown(rank, world), lambda: check_grow_refusals(rank, world),
                  lambda: check_new_group(rank, world, local_sync=True)):
        try:
            check()
        except Exception as e:  # noqa: BLE001
            fail(f"{check.__code__.co_names[0] if check.__code__.co_names else 'check'} raised "
                 f"{type(e).__name__}: {e}")
            raise
    finish(failures, f"every check passed ({world} processes, {mode}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
