"""The "tutti" torch.distributed backend against gloo, in the same processes.

Run under torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):
every collective (gather and scatter, the coalesced calls, sparse all-reduce
too), dtype and op on tutti is compared element by element with
the same call on a gloo group (or, where gloo lacks the call, its gloo
equivalent); DDP trains the same model on both and the losses and final
parameters must agree; new_group over a subset of ranks works; isend/irecv
complete in any issue order, match by tag and take any source;
monitoredBarrier names the rank that stayed away.
"""
import faulthandler
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import tutti_torch  # registers "tutti"

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
SIZES = [1, 7, 1023, 65537]
failures = []


def fail(what):
    failures.append(what)
    print(f"rank {dist.get_rank()}: FAIL {what}", file=sys.stderr)


def compare(what, got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return fail(f"{what}: got {got.dtype}{tuple(got.shape)}, want {want.dtype}{tuple(want.shape)}")
    if got.is_floating_point():
        # Reductions in another order round each partial sum (inputs are in
        # [-4, 4]): up to world roundings of sums up to 4 * world.
        world = dist.get_world_size()
        eps = torch.finfo(got.dtype).eps
        ok = torch.allclose(got.double(), want.double(), rtol=4 * world * eps, atol=4 * world * world * eps)
    else:
        ok = torch.equal(got, want)
    if not ok:
        bad = (got.double() - want.double()).abs().argmax().item()
        fail(f"{what}: element {bad} is {got.view(-1)[bad].item()}, want {want.view(-1)[bad].item()}")


def sample(dtype, n, seed, op=None):
    g = torch.Generator().manual_seed(seed)
    product = op is not None and op == dist.ReduceOp.PRODUCT
    if dtype.is_floating_point:
        lo, hi = (0.9, 1.1) if product else (-4.0, 4.0)
        return (torch.rand(n, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    hi = 3 if product else (100 if dtype in (torch.int8, torch.uint8) else 1 << 20)
    return torch.randint(0, hi, (n,), generator=g, dtype=torch.int64).to(dtype)


def gloo_reference(t, op, gloo):
    """What an all-reduce must give, computed on gloo (in float32 for the half
    types, which gloo may lack; AVG as SUM / n)."""
    ref = t.float() if t.dtype in (torch.float16, torch.bfloat16) else t.clone()
    gop = dist.ReduceOp.SUM if op == dist.ReduceOp.AVG else op
    dist.all_reduce(ref, op=gop, group=gloo)
    if op == dist.ReduceOp.AVG:
        ref = ref / dist.get_world_size()
    return ref.to(t.dtype)


def check_allreduce(gloo, rank):
    ops = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
           "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG, "band": dist.ReduceOp.BAND,
           "bor": dist.ReduceOp.BOR, "bxor": dist.ReduceOp.BXOR}
    for dtype in FLOATS + INTS:
        for name, op in ops.items():
            if name.startswith("b") and dtype.is_floating_point:
                continue
            if name == "avg" and not dtype.is_floating_point:
                continue
            for n in SIZES:
                t = sample(dtype, n, 1000 * rank + n, op)
                want = gloo_reference(t, op, gloo)
                got = t.clone()
                dist.all_reduce(got, op=op)
                compare(f"all_reduce {name} {dtype} x{n}", got, want)


def check_async_future(gloo, rank):
    t = sample(torch.float32, 4099, rank)
    want = gloo_reference(t, dist.ReduceOp.SUM, gloo)
    work = dist.all_reduce(t, async_op=True)
    value = work.get_future().wait()
    compare("all_reduce future value", value[0], want)
    if not work.is_completed():
        fail("work not completed after its future")


def check_gathers_and_broadcasts(gloo, rank, world):
    for dtype in [torch.float32, torch.int64, torch.float16, torch.uint8]:
        for n in SIZES:
            t = sample(dtype, n, 7 * rank + n)
            want = [torch.empty_like(t) for _ in range(world)]
            dist.all_gather(want, t, group=gloo)
            got = [torch.empty_like(t) for _ in range(world)]
            dist.all_gather(got, t)
            for r in range(world):
                compare(f"all_gather {dtype} x{n} from {r}", got[r], want[r])
            flat = torch.empty(world * n, dtype=dtype)
            gather_base = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
            gather_base(flat, t)
            compare(f"all_gather (tensor) {dtype} x{n}", flat, torch.cat(want))

            root = world - 1
            want_b, got_b = t.clone(), t.clone()
            dist.broadcast(want_b, src=root, group=gloo)
            dist.broadcast(got_b, src=root)
            compare(f"broadcast {dtype} x{n}", got_b, want_b)

            root = 1 % world
            for name, op in (("sum", dist.ReduceOp.SUM), ("max", dist.ReduceOp.MAX)):
                want_r = gloo_reference(t, op, gloo)
                got_r = t.clone()
                dist.reduce(got_r, dst=root, op=op)
                if rank == root:
                    compare(f"reduce {name} {dtype} x{n}", got_r, want_r)


def check_gather_scatter(gloo, rank, world):
    """gather and scatter to and from every root, against gloo's."""
    for dtype in [torch.float32, torch.float64, torch.int64, torch.uint8]:  # gloo gathers no bfloat16
        for n in [1, 7, 65537]:
            for root in range(world):
                t = sample(dtype, n, 11 * rank + n + root)
                want = [torch.empty_like(t) for _ in range(world)] if rank == root else None
                dist.gather(t, want, dst=root, group=gloo)
                got = [torch.full_like(t, 3) for _ in range(world)] if rank == root else None
                dist.gather(t, got, dst=root)
                if rank == root:
                    for r in range(world):
                        compare(f"gather {dtype} x{n} to {root} from {r}", got[r], want[r])
                pieces = [sample(dtype, n, 13 * r + n + root) for r in range(world)] if rank == root else None
                want_s = torch.empty_like(t)
                dist.scatter(want_s, pieces, src=root, group=gloo)
                got_s = torch.full_like(t, 3)
                dist.scatter(got_s, pieces, src=root)
                compare(f"scatter {dtype} x{n} from {root}", got_s, want_s)


def check_reduce_scatter(gloo, rank, world):
    # gloo has no reduce-scatter: the reference is its all-reduce, sliced.
    for dtype in [torch.float32, torch.int32, torch.bfloat16]:
        for name, op in (("sum", dist.ReduceOp.SUM), ("min", dist.ReduceOp.MIN), ("avg", dist.ReduceOp.AVG)):
            if name == "avg" and not dtype.is_floating_point:
                continue
            for n in SIZES:
                t = sample(dtype, n * world, 31 * rank + n)
                want = gloo_reference(t, op, gloo)[rank * n:(rank + 1) * n]
                got = torch.empty(n, dtype=dtype)
                dist.reduce_scatter(got, list(t.chunk(world)), op=op)
                compare(f"reduce_scatter {name} {dtype} x{n}", got, want)
                got2 = torch.empty(n, dtype=dtype)
                scatter_base = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
                scatter_base(got2, t, op=op)
                compare(f"reduce_scatter (tensor) {name} {dtype} x{n}", got2, want)
    # PREMUL_SUM (FSDP's gradient scaling): factor x the sum, the input untouched.
    for n in SIZES:
        t = sample(torch.float64, n * world, 17 * rank + n)
        before = t.clone()
        want = gloo_reference(t, dist.ReduceOp.SUM, gloo)[rank * n:(rank + 1) * n] * 0.25
        got = torch.empty(n, dtype=torch.float64)
        scatter_base = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
        scatter_base(got, t, op=dist._make_nccl_premul_sum(0.25))
        compare(f"reduce_scatter (tensor) premul_sum x{n}", got, want)
        compare(f"reduce_scatter premul_sum leaves its input x{n}", t, before)


def check_alltoall(gloo, rank, world):
    for dtype in [torch.float32, torch.int64]:
        for rows in (1, 5):
            t = sample(dtype, world * rows * 3, 11 * rank + rows).view(world * rows, 3)
            want, got = torch.empty_like(t), torch.empty_like(t)
            dist.all_to_all_single(want, t, group=gloo)
            dist.all_to_all_single(got, t)
            compare(f"all_to_all_single {dtype} rows {rows}", got, want)
        # Uneven: rank r sends p + 1 rows to p, so it receives r + 1 from each.
        in_splits = [p + 1 for p in range(world)]
        out_splits = [rank + 1] * world
        t = sample(dtype, sum(in_splits) * 2, 13 * rank).view(-1, 2)
        want = torch.empty(sum(out_splits), 2, dtype=dtype)
        got = torch.empty_like(want)
        dist.all_to_all_single(want, t, out_splits, in_splits, group=gloo)
        dist.all_to_all_single(got, t, out_splits, in_splits)
        compare(f"all_to_all_single uneven {dtype}", got, want)


def check_send_recv(gloo, rank, world):
    if world < 2:
        return
    right, left = (rank + 1) % world, (rank - 1) % world
    t = sample(torch.float32, 70001, rank)
    for group, label in ((gloo, "gloo"), (None, "tutti")):
        got = torch.empty_like(t)
        if rank % 2 == 0:
            dist.send(t, right, group=group)
            dist.recv(got, left, group=group)
        else:
            dist.recv(got, left, group=group)
            dist.send(t, right, group=group)
        if label == "gloo":
            want = got
    compare("send/recv around the ring", got, want)


def check_async_p2p(gloo, rank, world):
    """isend and irecv complete whatever order both ends issue them in: every
    rank sends first (4 MiB, more than the slots hold), messages are matched
    by tag (received in the other order), and recv takes any source."""
    if world < 2:
        return
    right, left = (rank + 1) % world, (rank - 1) % world
    big = sample(torch.float32, 1 << 20, rank)
    small = [sample(torch.int64, 1000 + k, 10 * rank + k) for k in range(2)]
    sends = [dist.isend(big, right, tag=7)] + [dist.isend(small[k], right, tag=k) for k in range(2)]
    got_big = torch.empty_like(big)
    got_small = [torch.empty(1000 + k, dtype=torch.int64) for k in range(2)]
    recvs = [dist.irecv(got_small[1], left, tag=1), dist.irecv(got_small[0], left, tag=0),
             dist.irecv(got_big, left, tag=7)]
    for w in sends + recvs:
        w.wait()
    compare("isend/irecv issued send-first on every rank", got_big, sample(torch.float32, 1 << 20, left))
    for k in range(2):
        compare(f"irecv matched by tag {k}", got_small[k], sample(torch.int64, 1000 + k, 10 * left + k))
    # Point-to-point moves bytes: dtypes tutti cannot reduce go too.
    for dtype in (torch.complex128, torch.int16):
        t = sample(torch.float64, 257, rank).to(dtype)
        got = torch.empty_like(t)
        w = dist.isend(t, right)
        dist.recv(got, left)
        w.wait()
        compare(f"send/recv of {dtype} as a real view", torch.view_as_real(got) if dtype.is_complex else got,
                torch.view_as_real(sample(torch.float64, 257, left).to(dtype)) if dtype.is_complex
                else sample(torch.float64, 257, left).to(dtype))
    # Any source: rank 0 takes one message from every other rank, in whatever
    # order they arrive, and learns who sent each.
    if rank == 0:
        seen = {}
        for _ in range(world - 1):
            t = torch.empty(513, dtype=torch.float64)
            src = dist.recv(t, tag=3)
            seen[src] = t
        if sorted(seen) != list(range(1, world)):
            fail(f"recv from any source saw sources {sorted(seen)}, want 1..{world - 1}")
        for src, t in seen.items():
            compare(f"recv from any source (rank {src})", t, sample(torch.float64, 513, src))
    else:
        dist.send(sample(torch.float64, 513, rank), 0, tag=3)
    # A recv nobody sends to fails after the group's timeout, naming the peer.
    from datetime import timedelta
    quick = dist.new_group(backend="tutti", timeout=timedelta(seconds=2))
    if rank == 0:
        try:
            dist.recv(torch.empty(4), 1, group=quick, tag=9)
            fail("recv from a rank that never sends returned")
        except RuntimeError as e:
            if "Timed out" not in str(e) or "recv from rank 1" not in str(e):
                fail(f"unanswered recv said {str(e).splitlines()[0]!r}")
    dist.barrier()


def check_coalesced(gloo, rank, world):
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT):
        for dtype in (torch.float32, torch.int64):
            ts = [sample(dtype, n, rank + n, op) for n in (1, 1023, 0, 65537)]
            want = [t.clone() for t in ts]
            dist.all_reduce_coalesced(want, op, group=gloo)
            dist.all_reduce_coalesced(ts, op)
            for n, (g, w) in enumerate(zip(ts, want)):
                compare(f"all_reduce_coalesced {op} {dtype} tensor {n}", g, w)
    for dtype in (torch.float64, torch.uint8, torch.complex64):
        inputs = [sample(torch.float32, n, rank + n).to(dtype) for n in (3, 0, 1031)]
        want = [[torch.empty_like(t) for t in inputs] for _ in range(world)]
        got = [[torch.empty_like(t) for t in inputs] for _ in range(world)]
        dist.all_gather_coalesced(want, inputs, group=gloo)
        dist.all_gather_coalesced(got, inputs)
        for r in range(world):
            for n in range(len(inputs)):
                if dtype.is_complex:
                    compare(f"all_gather_coalesced {dtype} [{r}][{n}]", torch.view_as_real(got[r][n]),
                            torch.view_as_real(want[r][n]))
                else:
                    compare(f"all_gather_coalesced {dtype} [{r}][{n}]", got[r][n], want[r][n])


def check_sparse(gloo, rank, world):
    """Sparse all-reduce (as sparse embedding gradients need): each rank holds
    different rows, some shared, some repeated."""
    for dtype in (torch.float32, torch.float64):
        rows = torch.tensor([[rank, 5, rank * 3 % 11, 5]])
        values = sample(dtype, 4 * 3, rank).reshape(4, 3)
        t = torch.sparse_coo_tensor(rows, values, (11, 3))
        want, got = t.clone(), t.clone()
        dist.all_reduce(want, group=gloo)
        dist.all_reduce(got)
        compare(f"sparse all_reduce {dtype}", got.to_dense(), want.to_dense())


def check_destroy_while_busy(rank, world):
    """A process group let go of while its queue still runs a call whose
    tensor only the call keeps: the queue's thread frees that tensor, which
    takes the GIL, so the group must not hold the GIL while it waits for the
    queue (it did: the process hung at exit, as PyTorch's suite once did in
    test_sparse_all_reduce_sum). The last rank comes late, so the others'
    groups go while their calls still wait for it."""
    store = dist.PrefixStore("destroy_while_busy", dist.distributed_c10d._get_default_store())
    pg = tutti_torch._C.create_process_group(store, rank, world, timedelta(seconds=60))
    if rank == world - 1:
        time.sleep(1)
    t = torch.full((1000,), float(rank + 1))
    work = pg.allreduce([t])
    if rank == world - 1:
        work.wait()
        compare("all_reduce before the group goes", t, torch.full((1000,), float(world * (world + 1) // 2)))
    del t, work
    # The hang held the GIL, so only faulthandler's own thread can end it:
    # with every thread's stack, and a failing exit, instead of ctest's timeout.
    faulthandler.dump_traceback_later(60, exit=True)
    del pg  # waits for the queued call, which waits for the last rank
    faulthandler.cancel_dump_traceback_later()


def check_monitored_barrier(rank, world):
    """tutti's monitoredBarrier, called on the process group itself (torch 1.x's
    dist.monitored_barrier refuses any backend but gloo by name)."""
    from datetime import timedelta
    pg = dist.distributed_c10d._get_default_group()
    pg.monitored_barrier(timedelta(seconds=30))
    pg.monitored_barrier(timedelta(seconds=30), wait_all_ranks=True)
    late = world - 1  # never arrives at the next one
    if rank == late:
        return
    try:
        pg.monitored_barrier(timedelta(seconds=2), wait_all_ranks=True)
        fail("monitored_barrier passed while a rank stayed away")
    except RuntimeError as e:
        want = (f"Ranks {late} failed to pass monitoredBarrier" if rank == 0 else
                f"Rank {rank} successfully reached monitoredBarrier, but received errors while waiting "
                f"for send/recv from rank 0")
        if want not in str(e):
            fail(f"monitored_barrier said {str(e).splitlines()[0]!r}, want {want!r}")


def check_ddp(gloo, rank):
    from torch.nn.parallel import DistributedDataParallel as DDP

    def train(group):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
        ddp = DDP(model, process_group=group)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(100 + rank)
        losses = []
        for _ in range(8):
            x = torch.randn(32, 16, generator=g)
            y = torch.randn(32, 4, generator=g)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        return torch.stack(losses), [p.detach().clone() for p in model.parameters()]

    tutti_losses, tutti_params = train(dist.group.WORLD)
    gloo_losses, gloo_params = train(gloo)
    compare("DDP losses", tutti_losses, gloo_losses)
    for i, (a, b) in enumerate(zip(tutti_params, gloo_params)):
        compare(f"DDP final parameter {i}", a, b)
    # Gradients were averaged: every rank ends with the same parameters.
    for i, p in enumerate(tutti_params):
        first = p.clone()
        dist.broadcast(first, src=0, group=gloo)
        compare(f"DDP parameter {i} equal on every rank", p, first)


def check_subgroup(rank, world):
    members = [0, world - 1] if world > 2 else [0]
    sub = dist.new_group(members, backend="tutti")
    sub_gloo = dist.new_group(members, backend="gloo")
    if rank in members:
        t = sample(torch.float64, 1031, rank)
        want, got = t.clone(), t.clone()
        dist.all_reduce(want, group=sub_gloo)
        dist.all_reduce(got, group=sub)
        compare(f"all_reduce on new_group({members})", got, want)
        if dist.get_world_size(sub) != len(members):
            fail(f"new_group size {dist.get_world_size(sub)}, want {len(members)}")


def check_build():
    """The module is the build the test was started for: with or without
    the CUDA-tensor path (TUTTI_TORCH_EXPECT_CUDA_PATH=ON or OFF)."""
    want = os.environ.get("TUTTI_TORCH_EXPECT_CUDA_PATH")
    if want is not None and tutti_torch._C.cuda_path() != (want == "ON"):
        fail(f"tutti_torch built with the CUDA path: {tutti_torch._C.cuda_path()}, want {want}")


def main():
    dist.init_process_group("tutti")
    rank, world = dist.get_rank(), dist.get_world_size()
    check_build()
    gloo = dist.new_group(backend="gloo")
    check_allreduce(gloo, rank)
    check_async_future(gloo, rank)
    check_gathers_and_broadcasts(gloo, rank, world)
    check_gather_scatter(gloo, rank, world)
    check_reduce_scatter(gloo, rank, world)
    check_alltoall(gloo, rank, world)
    check_send_recv(gloo, rank, world)
    check_async_p2p(gloo, rank, world)
    check_coalesced(gloo, rank, world)
    check_sparse(gloo, rank, world)
    check_ddp(gloo, rank)
    check_subgroup(rank, world)
    check_destroy_while_busy(rank, world)
    dist.barrier()
    check_monitored_barrier(rank, world)
    dist.barrier()
    dist.destroy_process_group()
    if failures:
        print(f"rank {rank}: {len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print(f"rank {rank}: every check passed ({world} processes, torch {torch.__version__}, "
          f"CUDA path {'built' if tutti_torch._C.cuda_path() else 'not built'})")


if __name__ == "__main__":
    main()
