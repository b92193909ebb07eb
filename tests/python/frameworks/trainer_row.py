"""The Transformers Trainer row, launched by `torchrun --nproc_per_node N`.

TrainingArguments.ddp_backend takes one of a fixed list of names ("nccl",
"gloo", "mpi", ...), and with use_cpu=True Accelerate underneath picks gloo.
What both support is a process group initialised before TrainingArguments is
made: Accelerate's PartialState adopts it. This row does that, and checks the
Trainer's DDP model reduces over tutti.
"""
import os
import tempfile

import torch.distributed as dist
from transformers import Trainer, TrainerCallback, TrainingArguments

import task


class Timing(TrainerCallback):
    """Rank 0's step times, and the loss the Trainer logs every step (gathered over the ranks)."""

    def __init__(self, record):
        self.record = record

    def on_step_begin(self, args, state, control, **kwargs):
        self.record.begin()

    def on_step_end(self, args, state, control, **kwargs):
        self.record.lap()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.record.losses.append(float(logs["loss"]))


class WrongOnRankOne(Trainer):
    """Applies TUTTI_FW_WRONG's sabotage inside the Trainer's own step."""

    def training_step(self, model, inputs, num_items_in_batch=None):
        inputs = task.maybe_wrong(inputs, self.state.global_step, self.args.process_index)
        return super().training_step(model, inputs, num_items_in_batch)


def main():
    backend = task.backend()
    if backend != "gloo":
        dist.init_process_group(backend)
    per_rank = task.per_rank_batch(int(os.environ["WORLD_SIZE"]))  # torchrun's
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, use_cpu=True, per_device_train_batch_size=per_rank,
                                 max_steps=task.steps(), learning_rate=task.LR, optim="sgd",
                                 lr_scheduler_type="constant", logging_steps=1, save_strategy="no",
                                 report_to=[], disable_tqdm=True, dataloader_drop_last=True, seed=0)
        assert dist.get_backend() == backend, f"the Trainer trains on {dist.get_backend()}, not {backend}"
        record = task.Recorder(args.process_index)
        trainer = WrongOnRankOne(model=task.make_model(), args=args, train_dataset=task.Sequences(),
                                 callbacks=[Timing(record)])
        trainer.train()
        record.write(trainer.model.named_parameters())
    dist.destroy_process_group()
    task.leave()


if __name__ == "__main__":
    main()
