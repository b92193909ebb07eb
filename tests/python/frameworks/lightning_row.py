"""The Lightning rows: a LightningModule trained by lightning.Trainer on the
CPU, the strategy given its backend as Lightning documents,
process_group_backend="tutti". Lightning starts the processes itself:

  python lightning_row.py --strategy ddp|fsdp|model_parallel --devices N [--nodes M]
  (on each of M nodes, with MASTER_ADDR, MASTER_PORT and NODE_RANK set)

ddp: DDPStrategy. fsdp: FSDPStrategy, which Lightning refuses on the CPU by
its type ("requires a GPU accelerator"); on the CPU this row is run as
model_parallel: ModelParallelStrategy, Lightning's FSDP2 strategy, with
fully_shard applied in configure_model as its documentation shows.
"""
import argparse

import lightning as L
import torch
from lightning.pytorch.strategies import DDPStrategy, FSDPStrategy, ModelParallelStrategy
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.utils.data import DataLoader

import task


class Classifier(L.LightningModule):
    def __init__(self, shard):
        super().__init__()
        self.shard = shard
        self.model = task.make_model()
        self.record = None

    def configure_model(self):
        if self.shard:  # ModelParallelStrategy: the module shards itself on the strategy's mesh
            mesh = self.device_mesh
            for layer in self.model.bert.encoder.layer:
                fully_shard(layer, mesh=mesh)
            fully_shard(self.model, mesh=mesh)

    def training_step(self, batch, index):
        return self.model(**task.maybe_wrong(batch, index, self.global_rank)).loss

    def on_train_batch_start(self, batch, index):
        if self.record is None:
            self.record = task.Recorder(self.global_rank)
        self.record.begin()

    def on_train_batch_end(self, outputs, batch, index):
        self.record.end(outputs["loss"])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=task.LR)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", choices=["ddp", "fsdp", "model_parallel"], required=True)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--nodes", type=int, default=1)
    args = parser.parse_args()
    backend = task.backend()
    strategy = {"ddp": lambda: DDPStrategy(process_group_backend=backend),
                "fsdp": lambda: FSDPStrategy(process_group_backend=backend),
                "model_parallel": lambda: ModelParallelStrategy(process_group_backend=backend)}[args.strategy]()
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, num_nodes=args.nodes, strategy=strategy,
                        max_steps=task.steps(), logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    module = Classifier(shard=args.strategy != "ddp")
    loader = DataLoader(task.Sequences(), batch_size=task.per_rank_batch(args.devices * args.nodes), shuffle=False)
    trainer.fit(module, loader)
    assert torch.distributed.get_backend() == backend, f"Lightning trains on {torch.distributed.get_backend()}"
    # Sharded parameters are gathered by every rank together.
    params = [(n, p.full_tensor() if isinstance(p, DTensor) else p) for n, p in module.model.named_parameters()]
    module.record.write(params)
    task.leave()


if __name__ == "__main__":
    main()
