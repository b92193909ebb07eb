"""A rank that leaves with calls still in flight exits cleanly.

Each rank issues async collectives whose futures carry Python callbacks, lets
go of everything and returns from the script without waiting or destroying
the group. The calls finish as Python exits; freeing their tensors and
callbacks takes the GIL, which a thread cannot take once the interpreter
finalizes (Python ends it mid-destructor and the process aborts:
"terminate called without an active exception"). tutti_torch drains its
groups at exit, before finalization; run_torchrun.sh fails on any rank's
abnormal exit.
"""
import torch
import torch.distributed as dist

import tutti_torch  # noqa: F401

dist.init_process_group("tutti")
for i in range(40):
    t = torch.full((1 << 18,), float(i))
    dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0].sum().item())
print(f"rank {dist.get_rank()}: leaving with calls in flight")
