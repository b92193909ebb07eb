"""What every framework row trains, and how a row reports.

The model is a BERT-style sequence classifier built from a Transformers config
with random weights (nothing is downloaded); the data are synthetic token
sequences from a fixed seed whose label is a function of the tokens, so the
loss falls. Each row trains STEPS steps of plain SGD on a global batch of
GLOBAL_BATCH sequences split across the ranks by the framework's own sampler,
and rank 0 writes what the driver compares (frameworks_compare.py):

  TUTTI_FW_OUT=<dir>   rank 0 writes <dir>/result.pt: the per-step losses of
                       rank 0, the per-step times, and every parameter at the end
  TUTTI_FW_BACKEND     the process-group backend: "tutti" (default) or "gloo"
  TUTTI_FW_STEPS       steps to train (default STEPS)
  TUTTI_FW_WRONG=1     rank 1 trains on a changed batch at step 1: what a
                       backend that lost or corrupted one rank's contribution
                       would do to the result; the driver must then fail
"""
import os
import sys
import time

import torch
from torch.utils.data import Dataset

VOCAB, SEQ = 512, 32
GLOBAL_BATCH = 8
STEPS = 4
LR = 0.05


def backend():
    name = os.environ.get("TUTTI_FW_BACKEND", "tutti")
    if name == "tutti":
        import tutti_torch  # noqa: F401  (registers "tutti" with torch.distributed)
    return name


def tutti_calls():
    """Calls tutti has served over every process group of this process (0 on
    gloo): the driver's proof that the framework trained over tutti, not
    beside it (DeepSpeed, for one, reduces on groups of its own)."""
    import torch.distributed as dist
    from tutti_torch import _C

    if backend() != "tutti":
        return 0
    calls = 0
    for group in list(dist.distributed_c10d._world.pg_map):
        try:
            served = group._get_backend(torch.device("cpu"))
        except RuntimeError:  # a group with no cpu backend
            continue
        if isinstance(served, _C.ProcessGroupTutti):
            calls += served._get_sequence_number_for_group()
    return calls


def leave():
    """Ends a rank's process. On gloo without Python's finalization: PyTorch's
    gloo group aborts the process there now and then (one run in four here,
    "terminate called without an active exception": ProcessGroupGloo's
    runLoop thread frees its last AsyncWork, whose ThreadLocalState takes the
    GIL while the interpreter finalizes). tutti's ranks exit the normal way:
    tutti_torch drains its threads at exit and must not abort."""
    if backend() == "gloo":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def steps():
    return int(os.environ.get("TUTTI_FW_STEPS", STEPS))


def make_model():
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=SEQ, num_labels=2,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertForSequenceClassification(config)


class Sequences(Dataset):
    """steps() * GLOBAL_BATCH sequences; sample i is the same on every rank and run."""

    def __init__(self, count=None):
        count = count or steps() * GLOBAL_BATCH
        g = torch.Generator().manual_seed(1234)
        self.tokens = torch.randint(0, VOCAB, (count, SEQ), generator=g)
        self.labels = (self.tokens[:, :4].sum(dim=1) % 2).long()

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, i):
        return {"input_ids": self.tokens[i], "labels": self.labels[i]}


def per_rank_batch(world):
    assert GLOBAL_BATCH % world == 0, f"{world} ranks do not split a global batch of {GLOBAL_BATCH}"
    return GLOBAL_BATCH // world


def maybe_wrong(batch, step, rank):
    """The sabotage of TUTTI_FW_WRONG: rank 1's step-1 batch changes."""
    if os.environ.get("TUTTI_FW_WRONG") == "1" and step == 1 and rank == 1:
        batch = dict(batch)
        batch["input_ids"] = (batch["input_ids"] + 1) % VOCAB
    return batch


class Recorder:
    """Rank 0's losses and step times, then the result file."""

    def __init__(self, rank):
        self.rank = rank
        self.losses, self.step_ms = [], []
        self._start = None

    def begin(self):
        self._start = time.perf_counter()

    def lap(self):
        self.step_ms.append((time.perf_counter() - self._start) * 1000)

    def end(self, loss):
        self.lap()
        self.losses.append(float(loss.detach()))

    def write(self, named_parameters, extra=None):
        out = os.environ.get("TUTTI_FW_OUT")
        if self.rank != 0 or not out:
            return
        params = {name: p.detach().float().cpu().clone() for name, p in named_parameters}
        torch.save({"losses": self.losses, "step_ms": self.step_ms, "params": params, "tutti_calls": tutti_calls(),
                    **(extra or {})}, os.path.join(out, "result.pt"))
        print(f"rank 0: {len(self.losses)} steps, losses {[round(x, 6) for x in self.losses]}", flush=True)
