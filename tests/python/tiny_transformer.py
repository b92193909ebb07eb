"""A small decoder-only transformer built from a config, with random weights
and synthetic tokens: the model the training tests and the step-time
benchmark use (nothing is downloaded)."""
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    vocab: int = 256
    dim: int = 64
    heads: int = 4
    layers: int = 2
    seq: int = 32


class Block(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.norm1 = nn.LayerNorm(c.dim)
        self.attn = nn.MultiheadAttention(c.dim, c.heads, batch_first=True)
        self.norm2 = nn.LayerNorm(c.dim)
        self.mlp = nn.Sequential(nn.Linear(c.dim, 4 * c.dim), nn.GELU(), nn.Linear(4 * c.dim, c.dim))

    def forward(self, x, mask):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.config = c
        self.embed = nn.Embedding(c.vocab, c.dim)
        self.pos = nn.Parameter(torch.zeros(c.seq, c.dim))
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.norm = nn.LayerNorm(c.dim)
        self.head = nn.Linear(c.dim, c.vocab)

    def forward(self, tokens):
        n = tokens.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf"), device=tokens.device), diagonal=1)
        x = self.embed(tokens) + self.pos[:n]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))


def make_model(config=None, seed=0):
    torch.manual_seed(seed)
    return TinyTransformer(config or Config())


def batch(config, step, rank, per_rank):
    """Rank `rank`'s share of step `step`'s global batch: inputs and targets."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    tokens = torch.randint(0, config.vocab, (per_rank, config.seq + 1), generator=g)
    return tokens[:, :-1], tokens[:, 1:]


def global_batch(config, step, world, per_rank):
    parts = [batch(config, step, r, per_rank) for r in range(world)]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def token_losses(model, inputs, targets):
    """Per-sequence mean cross-entropy, one value per row."""
    logits = model(inputs)
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")
    return loss.view(inputs.shape[0], -1).mean(dim=1)
