"""A job that survives a dead rank: DDP on tutti, one rank SIGKILLed in the
middle of a step. The survivors see the step fail, ask tutti which rank died
(tutti_torch.failed_ranks), shrink the world (torch.distributed.shrink_group),
roll the model back to the step's start, and go on with the global batch
split among fewer ranks. Later a new process takes the dead rank's place:
the survivors grow the group back (tutti_torch.grow; PyTorch has no grow),
the new process joins it (tutti_torch.join_grown), takes the model from rank
0 as DDP starts, and all go on. The final parameters of every rank, the new
one's too, must equal a reference computed in one process that follows the
same membership schedule.

Its own launcher, not torchrun: torchrun ends the whole job when a worker dies.
With --nodes, rank r runs in network namespace PREFIX-n(r % nodes) made by
tests/multinode/netns.sh (node 0's data0 is 10.77.0.1).

    python shrink_train.py [--procs 4] [--victim 1] [--kill-step 3] [--grow-step 6]
                           [--nodes 2 --prefix tutti-t]
"""
import argparse
import datetime
import os
import signal
import socket
import subprocess
import sys
import time

STEPS = 8
PER_RANK = 6  # samples a rank takes each step: fewer ranks, a smaller global batch
MOST_RANKS = 8
LR = 0.1


def make_model(torch):
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))


def global_batch(torch, step):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randn(PER_RANK * MOST_RANKS, 16, generator=g)
    y = torch.sin(x.sum(dim=1, keepdim=True))
    return x, y


def shard(x, y, rank, world):
    n = PER_RANK
    return x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n]


def reference(torch, members_at):
    """One process: each step's gradient is the mean over the members'
    shard-mean gradients, as DDP averages them. The membership matters: a
    step of 3 ranks learns from 18 samples, one of 4 from 24."""
    model = make_model(torch)
    for step in range(STEPS):
        world = members_at(step)
        x, y = global_batch(torch, step)
        grads = [torch.zeros_like(p) for p in model.parameters()]
        for r in range(world):
            model.zero_grad()
            xs, ys = shard(x, y, r, world)
            torch.nn.functional.mse_loss(model(xs), ys).backward()
            for g, p in zip(grads, model.parameters()):
                g += p.grad
        with torch.no_grad():
            for g, p in zip(grads, model.parameters()):
                p -= LR * g / world
    return [p.detach().clone() for p in model.parameters()]


GROW_KEY = "shrink_train/grow"


def job_store():
    """A client of the job's TCPStore (rank 0's), which the new process reaches too."""
    import torch.distributed as dist

    return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                         timeout=datetime.timedelta(seconds=120))


def train(torch, args, model, ddp, group, step, shrunk_at, grown_at, rank):
    """Steps from `step` to the end on `group` (None: the world); a step
    that fails (a rank died) is retried on the shrunk world, and at
    --grow-step the survivors grow back. `rank` names this process in the
    job as launched ("replacement" for the new one)."""
    import torch.distributed as dist
    import tutti_torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    while step < STEPS:
        if shrunk_at is not None and grown_at is None and step == args.grow_step:
            store = job_store()
            t0 = time.monotonic()
            group = tutti_torch.grow(args.procs, store, GROW_KEY)
            t1 = time.monotonic()
            # The new process learns where the job is; DDP gives it the model
            # (its first DDP in the process imports for about 2 s).
            group.broadcast(torch.tensor([step, shrunk_at]), 0).wait()
            ddp = DDP(model, process_group=group)
            grown_at = step
            print(f"rank {rank}: grown back to {group.size()} ranks in {t1 - t0:.3f} s, DDP over them after "
                  f"{time.monotonic() - t0:.3f} s", file=sys.stderr)
        world = group.size() if group is not None else dist.get_world_size()
        me = group.rank() if group is not None else dist.get_rank()
        snapshot = {k: v.clone() for k, v in model.state_dict().items()}
        x, y = global_batch(torch, step)
        xs, ys = shard(x, y, me, world)
        try:
            loss = torch.nn.functional.mse_loss(ddp(xs), ys)
            if rank == args.victim and step == args.kill_step:
                os.kill(os.getpid(), signal.SIGKILL)  # in the middle of the step
            model.zero_grad()
            loss.backward()
        except Exception as e:  # the step failed: who is gone?
            failed = tutti_torch.failed_ranks()
            t0 = time.monotonic()
            print(f"rank {rank}: step {step} failed ({type(e).__name__}); tutti names {failed}", file=sys.stderr)
            if failed != [args.victim]:
                raise SystemExit(f"rank {rank}: tutti named {failed}, not rank {args.victim}")
            dist.shrink_group(failed)
            # Roll back to the step's start, and a new DDP over the shrunk world.
            model = make_model(torch)
            model.load_state_dict(snapshot)
            ddp = DDP(model)
            shrunk_at = step
            print(f"rank {rank}: now rank {dist.get_rank()} of {dist.get_world_size()}, shrunk in "
                  f"{time.monotonic() - t0:.3f} s", file=sys.stderr)
            continue
        with torch.no_grad():
            for p in model.parameters():
                p -= LR * p.grad
        step += 1
    return model, group, shrunk_at, grown_at


def check_against_reference(torch, args, model, shrunk_at, grown_at, rank):
    if shrunk_at is None or grown_at is None:
        raise SystemExit(f"rank {rank}: shrunk at step {shrunk_at}, grown at {grown_at}: both should have happened")

    def members(s):
        return args.procs - 1 if shrunk_at <= s < grown_at else args.procs

    want = reference(torch, members)
    worst = max((p - w).abs().max().item() for p, w in zip(model.parameters(), want))
    print(f"rank {rank}: final parameters within {worst:.2e} of the reference (shrunk at step {shrunk_at}, "
          f"grown at {grown_at})", file=sys.stderr)
    if worst > 1e-6:
        raise SystemExit(f"rank {rank}: parameters differ from the reference by {worst}")


def rank_main(args):
    import torch
    import torch.distributed as dist
    import tutti_torch  # noqa: F401 (registers "tutti")
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank = int(os.environ["RANK"])
    dist.init_process_group("tutti")
    model = make_model(torch)
    model, group, shrunk_at, grown_at = train(torch, args, model, DDP(model), None, 0, None, None, rank)
    check_against_reference(torch, args, model, shrunk_at, grown_at, rank)
    dist.destroy_process_group()


def replacement_main(args):
    """The new process: joins the survivors' grow as the last rank."""
    import torch
    import tutti_torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank = args.procs - 1
    group = tutti_torch.join_grown(job_store(), GROW_KEY, rank, args.procs)
    where = torch.zeros(2, dtype=torch.int64)
    group.broadcast(where, 0).wait()
    step, shrunk_at = (int(v) for v in where)
    print(f"replacement: joined as rank {rank} of {group.size()} at step {step}", file=sys.stderr)
    model = make_model(torch)  # its parameters are replaced by rank 0's as DDP starts
    model, group, _, _ = train(torch, args, model, DDP(model, process_group=group), group, step, shrunk_at, step,
                               rank="replacement")
    check_against_reference(torch, args, model, shrunk_at, step, "replacement")


def launch(args):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    nodes = max(args.nodes, 1)

    def start(mode, r):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(args.procs), LOCAL_RANK=str(r // nodes),
                   MASTER_ADDR="10.77.0.1" if args.nodes else "127.0.0.1", MASTER_PORT=str(port),
                   TUTTI_SOCKET_IFNAME="data" if args.nodes else "lo", OMP_NUM_THREADS="1", TUTTI_TIMEOUT="20")
        command = [sys.executable, __file__, mode] + sys.argv[1:]
        if args.nodes:
            command = ["ip", "netns", "exec", f"{args.prefix}-n{r % nodes}"] + command
        procs.append(subprocess.Popen(command, env=env, start_new_session=True))

    for r in range(args.procs):
        start("--rank-main", r)
    start("--replacement", args.victim)  # on the dead rank's node; it waits for the grow
    deadline = time.monotonic() + 240
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=max(1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise SystemExit("ranks did not finish in 240 s")
    bad = [(r, c) for r, c in enumerate(codes) if (c != -signal.SIGKILL if r == args.victim else c != 0)]
    if bad:
        raise SystemExit(f"exit codes {codes} (the replacement's last): rank {args.victim} should die by SIGKILL, "
                         "the others pass")
    where = f" on {args.nodes} namespace nodes" if args.nodes else ""
    print(f"shrink_train: rank {args.victim} killed at step {args.kill_step}{where}; {args.procs - 1} survivors "
          f"shrank, grew a new process in at step {args.grow_step}, and all finished equal to the reference")

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--victim", type=int, default=1)
    ap.add_argument("--kill-step", type=int, default=3)
    ap.add_argument("--grow-step", type=int, default=6)
    ap.add_argument("--nodes", type=int, default=0, help="namespace nodes (0: this host's loopback)")
    ap.add_argument("--prefix", default="tutti-t")
    ap.add_argument("--rank-main", action="store_true")
    ap.add_argument("--replacement", action="store_true")
    a = ap.parse_args()
    rank_main(a) if a.rank_main else replacement_main(a) if a.replacement else launch(a)
