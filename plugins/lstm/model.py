"""The bidirectional LSTM classifier. Parameter names:

  emb.weight [V, n_embd]                         (the padding row stays zero)
  lstm.{weight_ih,weight_hh,bias_ih,bias_hh}_l{i}[_reverse]   (torch.nn.LSTM's own)
  head.{weight [K, 2 * hidden], bias [K]}

Each text runs through the LSTM as a packed sequence of its real tokens only, so padding a
batch leaves every example's output unchanged; the head reads the mean of the states over
those tokens.
"""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from zoo.plugin import TaskSpec
from zoo.plugin.layers import check_length


class BiLSTM(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task != "classification" or not spec.num_classes:
            raise ValueError(f"lstm serves classification only, not {spec.task}")
        self.cfg = cfg
        self.emb = nn.Embedding(spec.vocab_size, cfg.n_embd, padding_idx=spec.pad_id)
        self.lstm = nn.LSTM(
            cfg.n_embd,
            cfg.hidden,
            num_layers=cfg.n_layer,
            batch_first=True,
            bidirectional=True,
            dropout=cfg.dropout if cfg.n_layer > 1 else 0.0,
        )
        self.drop = nn.Dropout(cfg.dropout)
        self.head = nn.Linear(2 * cfg.hidden, spec.num_classes)

    def forward(self, input_ids, attention_mask=None):  # [B, T] -> [B, K]
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        length = check_length(input_ids, self.cfg.block_size)
        lengths = attention_mask.sum(dim=1).clamp(min=1)
        packed = pack_padded_sequence(
            self.drop(self.emb(input_ids)), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        states, _ = pad_packed_sequence(
            self.lstm(packed)[0], batch_first=True, total_length=length
        )  # [B, T, 2 * hidden], 0 past the end
        mean = states.sum(dim=1) / lengths.unsqueeze(-1).to(states.dtype)
        return self.head(self.drop(mean))


def build(cfg, spec: TaskSpec) -> BiLSTM:
    return BiLSTM(cfg, spec)
