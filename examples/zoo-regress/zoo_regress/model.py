"""The ``bitmlp`` network and the task's loss (torch; imported on first use)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def squared_error(outputs: torch.Tensor, targets: torch.Tensor, reduction: str) -> torch.Tensor:
    """The regression task's loss: the mean (or sum) of squared errors, outputs [B] against
    float targets [B]. zoo's engine calls it for every model of the task."""
    return F.mse_loss(
        outputs.reshape(targets.shape), targets.to(outputs.dtype), reduction=reduction
    )


class BitMLP(nn.Module):
    def __init__(self, config, spec):
        super().__init__()
        self.token = nn.Embedding(spec.vocab_size, config.n_embd)
        self.position = nn.Parameter(torch.zeros(config.block_size, config.n_embd))
        self.mlp = nn.Sequential(
            nn.Linear(config.block_size * config.n_embd, config.hidden),
            nn.ReLU(),
            nn.Linear(config.hidden, 1),
        )

    def forward(self, input_ids, attention_mask=None):  # [B, T] -> values [B]
        x = self.token(input_ids) + self.position[: input_ids.shape[1]]  # [B, T, C]
        if attention_mask is not None:
            x = x * attention_mask.unsqueeze(-1).to(x.dtype)  # padding contributes nothing
        if x.shape[1] < self.position.shape[0]:  # pad to block_size: the MLP takes a fixed width
            x = F.pad(x, (0, 0, 0, self.position.shape[0] - x.shape[1]))
        return self.mlp(x.flatten(1)).squeeze(-1)


def build(config, spec):
    return BitMLP(config, spec)
