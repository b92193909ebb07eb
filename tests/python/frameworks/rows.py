"""The framework rows and how each is launched, on this host or on namespace
nodes (tests/multinode/netns.sh PREFIX-n0..; node 0's data0 is 10.77.0.1).

A row is started the way its framework's documentation starts it: torchrun,
torch.multiprocessing.spawn, `accelerate launch`, or Lightning's own launcher
(the script started once per node). run() starts one row on one backend and
returns rank 0's result (task.py).
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
NODE0_ADDRESS = "10.77.0.1"


@dataclass(frozen=True)
class Row:
    name: str
    launcher: str  # torchrun | spawn | accelerate | lightning
    script: str
    args: tuple = ()


ROWS = [
    Row("DDP, torchrun", "torchrun", "ddp_row.py"),
    Row("DDP, torchrun, autocast", "torchrun", "ddp_row.py", ("--amp",)),
    Row("DDP, mp.spawn", "spawn", "ddp_row.py"),
    Row("DDP, mp.spawn, autocast", "spawn", "ddp_row.py", ("--amp",)),
    Row("Accelerate", "accelerate", "accelerate_row.py"),
    Row("Transformers Trainer", "torchrun", "trainer_row.py"),
    Row("Lightning DDPStrategy", "lightning", "lightning_row.py", ("--strategy", "ddp")),
    Row("Lightning ModelParallelStrategy (FSDP2)", "lightning", "lightning_row.py", ("--strategy", "model_parallel")),
    Row("DeepSpeed ZeRO-1", "torchrun", "deepspeed_row.py", ("--stage", "1")),
    Row("DeepSpeed ZeRO-2", "torchrun", "deepspeed_row.py", ("--stage", "2")),
    Row("DeepSpeed ZeRO-3", "torchrun", "deepspeed_row.py", ("--stage", "3")),
]


def by_names(names):
    """Rows whose names contain any of the comma-separated words (all rows
    when none is given) and none of the words written with a leading '-'."""
    words = [w.strip().lower() for w in (names or "").split(",") if w.strip()]
    wanted = [w for w in words if not w.startswith("-")]
    unwanted = [w[1:] for w in words if w.startswith("-")]
    return [r for r in ROWS
            if (not wanted or any(w in r.name.lower() for w in wanted))
            and not any(w in r.name.lower() for w in unwanted)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_node_ports = iter(range(29500 + os.getpid() % 200 * 10, 65000))


def next_node_port():
    """Inside the namespaces no other program listens: a new port each run
    keeps a run clear of the last one's closing sockets."""
    return next(_node_ports)


def node_command(row, node, nodes, procs, address, port):
    """The command and extra environment that start `row` on node `node`."""
    python = sys.executable
    script = os.path.join(HERE, row.script)
    if row.launcher == "torchrun":
        return [python, "-m", "torch.distributed.run", f"--nnodes={nodes}", f"--node_rank={node}",
                f"--nproc_per_node={procs}", f"--master_addr={address}", f"--master_port={port}",
                script, *row.args], {}
    if row.launcher == "spawn":
        return [python, script, "--spawn", str(procs), *row.args], {
            "NNODES": str(nodes), "NODE_RANK": str(node), "MASTER_ADDR": address, "MASTER_PORT": str(port)}
    if row.launcher == "accelerate":
        return [python, "-m", "accelerate.commands.launch", "--multi_gpu", f"--num_processes={procs * nodes}",
                f"--num_machines={nodes}", f"--machine_rank={node}", f"--main_process_ip={address}",
                f"--main_process_port={port}", "--mixed_precision=no", "--dynamo_backend=no", script, *row.args], {}
    if row.launcher == "lightning":
        return [python, script, "--devices", str(procs), "--nodes", str(nodes), *row.args], {
            "NODE_RANK": str(node), "MASTER_ADDR": address, "MASTER_PORT": str(port)}
    raise ValueError(row.launcher)


def run(row, backend, procs, nodes=1, prefix=None, steps=None, wrong=False, timeout=600):
    """Trains `row` on `backend`; returns rank 0's result, or raises with the logs."""
    with tempfile.TemporaryDirectory() as out:
        interface = "data0" if prefix else "lo"
        env = dict(os.environ, TUTTI_FW_BACKEND=backend, TUTTI_FW_OUT=out, OMP_NUM_THREADS="1",
                   TUTTI_SOCKET_IFNAME=interface, GLOO_SOCKET_IFNAME=interface, TUTTI_TIMEOUT="120",
                   PYTHONPATH=os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p),
                   PYTHONWARNINGS="ignore", TRANSFORMERS_VERBOSITY="error")
        env.pop("TUTTI_FW_WRONG", None)
        if wrong:
            env["TUTTI_FW_WRONG"] = "1"
        if steps:
            env["TUTTI_FW_STEPS"] = str(steps)
        address = NODE0_ADDRESS if prefix else "127.0.0.1"
        port = next_node_port() if prefix else free_port()
        procs_running = []
        for node in range(nodes):
            command, extra = node_command(row, node, nodes, procs, address, port)
            if prefix:
                command = ["ip", "netns", "exec", f"{prefix}-n{node}", *command]
            log = open(os.path.join(out, f"node{node}.log"), "w+")
            # A session of its own: on a timeout the launcher goes with every worker it started.
            procs_running.append((subprocess.Popen(command, cwd=HERE, env={**env, **extra}, stdout=log,
                                                   stderr=subprocess.STDOUT, start_new_session=True), log))
        failed = False
        deadline = time.monotonic() + timeout  # one bound for the whole row, not one per node
        for p, _ in procs_running:
            try:
                failed |= p.wait(timeout=max(deadline - time.monotonic(), 0)) != 0
            except subprocess.TimeoutExpired:
                failed = True
        for p, _ in procs_running:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        logs = ""
        for node, (_, log) in enumerate(procs_running):
            log.seek(0)
            logs += "".join(f"[node {node}] {line}" for line in log.read().splitlines(True))
            log.close()
        result_path = os.path.join(out, "result.pt")
        if failed or not os.path.exists(result_path):
            raise RuntimeError(f"{row.name} on {backend} failed or passed {timeout} s:\n{logs[-6000:]}")
        return torch.load(result_path)
