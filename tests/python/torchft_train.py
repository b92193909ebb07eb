"""torchft on tutti: torchft's Manager, its DDP and its optimizer wrapper over
tutti_torch.torchft.ProcessGroupTutti, 2 replica groups of one process each,
the way torchft's DDP example trains. Replica 1 is SIGKILLed in the middle of
a step; replica 0 goes on alone (its next quorum has one member), the
launcher starts replica 1 again, and it heals from replica 0's state
(torchft's HTTP checkpoint transport) and trains beside it to the end.

Checked: replica 0 trained steps with 1 participant and with 2; the new
replica 1 joined at a later step than 0 and healed; both reach the last step
with equal parameters, bit for bit; the loss on a held-out batch fell; every
quorum's process group was tutti's, and it served the calls. torchft means
its process group to be wrapped in its ErrorSwallowingProcessGroupWrapper: a
call that fails (the replica died during it) then fails the step, which is
not committed, instead of raising in DDP's hook.

    python torchft_train.py [--steps 40] [--kill-step 5] [--stagger SECONDS]
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta

FEATURES = 16


def make_model(torch):
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))


def batch(torch, step, replica):
    g = torch.Generator().manual_seed(1000 * replica + step)
    x = torch.randn(8, FEATURES, generator=g)
    return x, torch.sin(x.sum(dim=1, keepdim=True))


def start_together(out, replica, timeout=120):
    """Waits until the other first-started replica is ready too. A replica
    whose imports finished seconds before its peer's would otherwise commit
    its first steps alone, and the kill step would no longer meet a replica 0
    that is training beside it (a loaded CI machine showed that skew)."""
    open(os.path.join(out, f"ready{replica}"), "w").close()
    other = os.path.join(out, f"ready{1 - replica}")
    deadline = time.monotonic() + timeout
    while not os.path.exists(other):
        if time.monotonic() > deadline:
            raise SystemExit(f"replica {replica}: replica {1 - replica} was not ready within {timeout} s")
        time.sleep(0.05)


def replica_main(args):
    import torch
    from torchft import DistributedDataParallel, Manager
    from torchft.optim import OptimizerWrapper
    from torchft.process_group import ErrorSwallowingProcessGroupWrapper

    import tutti_torch
    from tutti_torch.torchft import ProcessGroupTutti

    replica = int(os.environ["REPLICA"])
    restarted = bool(os.environ.get("RESTARTED"))
    model = make_model(torch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    def state_dict():
        return {"model": model.state_dict(), "optim": optimizer.state_dict()}

    def load_state_dict(state):
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optim"])

    # A call that fails (a replica died during it) is swallowed and the step
    # not committed, as torchft means a process group to be used.
    tutti_pg = ProcessGroupTutti(timeout=timedelta(seconds=20))
    pg = ErrorSwallowingProcessGroupWrapper(tutti_pg)
    manager = Manager(pg=pg, min_replica_size=1, load_state_dict=load_state_dict, state_dict=state_dict,
                      replica_id=f"tutti_ft_{replica}", timeout=timedelta(seconds=20), hostname="127.0.0.1")
    ddp = DistributedDataParallel(manager, model)
    opt = OptimizerWrapper(manager, optimizer)
    if not restarted:
        start_together(args.out, replica)
    participants, first_step, served = set(), None, 0
    while manager.current_step() < args.steps:
        opt.zero_grad()  # starts this step's quorum
        x, y = batch(torch, manager.current_step(), replica)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        if replica == 1 and not restarted and manager.current_step() == args.kill_step:
            os.kill(os.getpid(), signal.SIGKILL)  # in the middle of the step
        loss.backward()
        before = manager.current_step()
        opt.step()  # applies the averaged gradients if every participant committed
        if manager.current_step() > before:
            if first_step is None:
                first_step = before
            participants.add(manager.num_participants())
            backend = tutti_pg._pg._get_backend(torch.device("cpu"))
            if not isinstance(backend, tutti_torch._C.ProcessGroupTutti):
                raise SystemExit(f"replica {replica}: step {before}'s group is {type(backend).__name__}, not tutti's")
            served = max(served, backend._get_sequence_number_for_group())
        time.sleep(args.pace)  # replica 0 must not end before the restarted one is back
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    x, y = batch(torch, 999, 99)  # held out: what training should have improved
    with torch.no_grad():
        losses = [torch.nn.functional.mse_loss(m(x), y).item() for m in (make_model(torch), model)]
    torch.save({"params": params, "participants": sorted(participants), "first_step": first_step,
                "losses": losses, "served": served}, os.path.join(args.out, f"replica{replica}.pt"))
    print(f"replica {replica}{' (restarted)' if restarted else ''}: steps {first_step}..{args.steps - 1} committed, "
          f"participants {sorted(participants)}, held-out loss {losses[0]:.4f} -> {losses[1]:.4f}", file=sys.stderr)
    manager.shutdown(wait=False)


def launch(args):
    import torch
    import torch.distributed as dist
    from torchft._torchft import LighthouseServer

    lighthouse = LighthouseServer(bind="[::]:0", min_replicas=1, join_timeout_ms=2000)
    stores = [dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False) for _ in range(2)]
    out = tempfile.mkdtemp(prefix="tutti-torchft-")

    def start(replica, restarted=False):
        # The lighthouse names this host; loopback is what the test's ranks use.
        lighthouse_port = lighthouse.address().rsplit(":", 1)[1]
        env = dict(os.environ, TORCHFT_LIGHTHOUSE=f"http://127.0.0.1:{lighthouse_port}", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(stores[replica].port), RANK="0", WORLD_SIZE="1", REPLICA=str(replica),
                   TUTTI_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        if restarted:
            env["RESTARTED"] = "1"
        command = [sys.executable, __file__, "--replica", "--out", out] + sys.argv[1:]
        return subprocess.Popen(command, env=env, start_new_session=True)

    procs = [None, start(1)]
    time.sleep(args.stagger)  # a loaded machine's skew between the replicas' starts
    procs[0] = start(0)
    deadline = time.monotonic() + 240
    try:
        first = procs[1].wait(timeout=120)
        if first != -signal.SIGKILL:
            raise SystemExit(f"replica 1 ended with {first} before it was killed")
        procs[1] = start(1, restarted=True)
        codes = [p.wait(timeout=max(1, deadline - time.monotonic())) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        raise SystemExit("the replicas did not finish in time")
    finally:
        lighthouse.shutdown()
    if codes != [0, 0]:
        raise SystemExit(f"exit codes {codes}")
    r0, r1 = (torch.load(os.path.join(out, f"replica{r}.pt")) for r in (0, 1))
    problems = []
    if r0["participants"] != [1, 2]:
        problems.append(f"replica 0 committed steps with {r0['participants']} participants, want [1, 2]")
    # The step replica 1 died in was not committed: a replica that healed
    # starts at it or later; one that did not, at 0.
    if r1["first_step"] is None or r1["first_step"] < args.kill_step:
        problems.append(f"the restarted replica 1 first committed step {r1['first_step']}: it should have healed "
                        f"to replica 0's step, {args.kill_step} or later")
    if not torch.equal(r0["params"], r1["params"]):
        problems.append(f"final parameters differ by {(r0['params'] - r1['params']).abs().max().item()}")
    for r, name in ((r0, "replica 0"), (r1, "replica 1")):
        if not r["losses"][1] < 0.8 * r["losses"][0]:
            problems.append(f"{name}'s held-out loss did not fall: {r['losses'][0]} -> {r['losses'][1]}")
        if r["served"] < 1:
            problems.append(f"{name}: tutti's group counted {r['served']} calls")
    if problems:
        raise SystemExit("torchft_train: " + "; ".join(problems))
    print(f"torchft_train: replica 1 killed at step {args.kill_step}, restarted, healed at step {r1['first_step']}; "
          f"both ended at step {args.steps} with equal parameters, on tutti's process group")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--kill-step", type=int, default=5)
    ap.add_argument("--pace", type=float, default=0.2, help="seconds a replica sleeps after each step")
    ap.add_argument("--stagger", type=float, default=0, help="seconds replica 0 starts after replica 1")
    ap.add_argument("--replica", action="store_true")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    replica_main(a) if a.replica else launch(a)
