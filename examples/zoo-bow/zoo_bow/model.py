"""The bag-of-embeddings network: order-blind, a baseline every transformer should beat."""

import torch
import torch.nn as nn


class BagOfEmbeddings(nn.Module):
    def __init__(self, config, spec):
        super().__init__()
        self.task = spec.task
        self.embed = nn.Embedding(spec.vocab_size, config.n_embd)
        outputs = spec.num_classes if spec.task == "classification" else spec.vocab_size
        self.head = nn.Linear(config.n_embd, outputs)

    def forward(self, input_ids, attention_mask=None):  # [B, T] -> logits
        x = self.embed(input_ids)  # [B, T, C]
        mask = (
            (torch.ones_like(input_ids) if attention_mask is None else attention_mask)
            .unsqueeze(-1)
            .to(x.dtype)
        )
        if self.task == "language-modeling":
            # position t sees the mean of tokens 0..t
            running = (x * mask).cumsum(dim=1) / mask.cumsum(dim=1).clamp(min=1)
            return self.head(running)  # [B, T, V]
        pooled = (x * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)  # [B, C]
        return self.head(pooled)


def build(config, spec):
    return BagOfEmbeddings(config, spec)
