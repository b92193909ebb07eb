"""A job that survives a dead rank: DDP on tutti, one rank SIGKILLed in the
middle of a step. The survivors see the step fail, ask tutti which rank died
(tutti_torch.failed_ranks), shrink the world (torch.distributed.shrink_group),
roll the model back to the step's start, and go on with the global batch
split among fewer ranks. The final parameters must equal a reference
computed in one process that follows the same membership schedule.

Its own launcher, not torchrun: torchrun ends the whole job when a worker dies.
With --nodes, rank r runs in network namespace PREFIX-n(r % nodes) made by
tests/multinode/netns.sh (node 0's data0 is 10.77.0.1).

    python shrink_train.py [--procs 4] [--victim 1] [--kill-step 3] [--nodes 2 --prefix tutti-t]
"""
import argparse
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


def rank_main(args):
    import torch
    import torch.distributed as dist
    import tutti_torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank = int(os.environ["RANK"])
    dist.init_process_group("tutti")
    world = dist.get_world_size()
    model = make_model(torch)
    ddp = DDP(model)
    step = 0
    shrunk_at = None
    while step < STEPS:
        snapshot = {k: v.clone() for k, v in model.state_dict().items()}
        x, y = global_batch(torch, step)
        xs, ys = shard(x, y, dist.get_rank(), world)
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
            world = dist.get_world_size()
            # Roll back to the step's start, and a new DDP over the shrunk world.
            model = make_model(torch)
            model.load_state_dict(snapshot)
            ddp = DDP(model)
            shrunk_at = step
            print(f"rank {rank}: now rank {dist.get_rank()} of {world}, shrunk in {time.monotonic() - t0:.3f} s",
                  file=sys.stderr)
            continue
        with torch.no_grad():
            for p in model.parameters():
                p -= LR * p.grad
        step += 1
    if shrunk_at is None:
        raise SystemExit(f"rank {rank}: never saw rank {args.victim} die")
    want = reference(torch, lambda s: args.procs if s < shrunk_at else args.procs - 1)
    worst = max((p - w).abs().max().item() for p, w in zip(model.parameters(), want))
    print(f"rank {rank}: final parameters within {worst:.2e} of the reference (shrunk at step {shrunk_at})",
          file=sys.stderr)
    if worst > 1e-6:
        raise SystemExit(f"rank {rank}: parameters differ from the reference by {worst}")
    dist.destroy_process_group()


def launch(args):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    nodes = max(args.nodes, 1)
    for r in range(args.procs):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(args.procs), LOCAL_RANK=str(r // nodes),
                   MASTER_ADDR="10.77.0.1" if args.nodes else "127.0.0.1", MASTER_PORT=str(port),
                   TUTTI_SOCKET_IFNAME="data" if args.nodes else "lo", OMP_NUM_THREADS="1", TUTTI_TIMEOUT="20")
        command = [sys.executable, __file__, "--rank-main"] + sys.argv[1:]
        if args.nodes:
            command = ["ip", "netns", "exec", f"{args.prefix}-n{r % nodes}"] + command
        procs.append(subprocess.Popen(command, env=env, start_new_session=True))
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
        raise SystemExit(f"exit codes {codes}: rank {args.victim} should die by SIGKILL, the others pass")
    where = f" on {args.nodes} namespace nodes" if args.nodes else ""
    print(f"shrink_train: rank {args.victim} killed at step {args.kill_step}{where}; {args.procs - 1} survivors "
          "shrank and finished equal to the reference")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--victim", type=int, default=1)
    ap.add_argument("--kill-step", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=0, help="namespace nodes (0: this host's loopback)")
    ap.add_argument("--prefix", default="tutti-t")
    ap.add_argument("--rank-main", action="store_true")
    a = ap.parse_args()
    rank_main(a) if a.rank_main else launch(a)
