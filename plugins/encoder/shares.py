"""The ensemble's shares of the averaged probabilities, fitted on held-out data (with
``fit_shares``): every way of splitting the average into tenths between the member groups
is tried, and the one with the most right answers wins, the lowest log loss breaking ties."""
from __future__ import annotations

import itertools

import torch

STEPS = 10  # shares are multiples of 1/STEPS
CHUNK = 32  # candidate splits scored at once (memory: CHUNK x rows x classes)


def share_grid(groups: int, steps: int = STEPS) -> torch.Tensor:
    """Every split of 1 into `groups` non-negative multiples of 1/steps: [C, groups]."""
    splits = [split for split in itertools.product(range(steps + 1), repeat=groups)
              if sum(split) == steps]
    return torch.tensor(splits, dtype=torch.float32) / steps


def score_splits(group_probs: torch.Tensor, targets: torch.Tensor,
                 grid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For each split [C, G] of the shares, the rows its weighted mean of the groups'
    probabilities [N, G, K] answers right, and its mean log loss: [C] and [C]."""
    right, loss = [], []
    for chunk in grid.split(CHUNK):
        mix = torch.einsum("ngk,cg->cnk", group_probs.float(), chunk)  # [C, N, K]
        right.append((mix.argmax(dim=-1) == targets).sum(dim=-1))
        chosen = mix.gather(-1, targets.expand(len(chunk), -1).unsqueeze(-1)).squeeze(-1)
        loss.append(-chosen.clamp_min(1e-12).log().mean(dim=-1))
    return torch.cat(right), torch.cat(loss)


def fit_shares(group_probs: torch.Tensor, targets: torch.Tensor,
               steps: int = STEPS) -> torch.Tensor:
    """The shares [G] of the groups' probabilities [N, G, K] whose weighted mean answers the
    most rows right; among equals, the one with the lowest mean log loss, then the first."""
    grid = share_grid(group_probs.shape[1], steps).to(group_probs.device)
    right, loss = score_splits(group_probs, targets, grid)
    best = right == right.max()
    return grid[torch.where(best, loss, torch.inf).argmin()]
