"""The encoder network (BERT-shaped, pre-LN). Parameter names:

  tok_emb.weight [V, C]            pos_emb.weight [T, C]          emb_ln.{weight,bias} [C]
  blocks.{i}.ln1.{weight,bias} [C] blocks.{i}.attn.qkv.{weight [3C, C], bias [3C]}
  blocks.{i}.attn.proj.{weight [C, C], bias [C]}
  blocks.{i}.ln2.{weight,bias} [C] blocks.{i}.mlp.fc.{weight [HC, C], bias [HC]}
  blocks.{i}.mlp.proj.{weight [C, HC], bias [C]}                  (H = mlp_ratio)
  ln_f.{weight,bias} [C]
  head.{weight [K, C], bias [K]}   classification: K = num_classes
  head.{weight [V, C], bias [V]}   next-item: K = vocab size; weight tied to tok_emb when
                                   config.tie_weights (kept once, as tok_emb.weight)
  head.{weight [V, C], bias [V]}   masked-language-modeling: the same head at every position
                                   (so a classifier started from it gets every tensor but
                                   the head)

With members > 1, lstm_members, bag_dim or nb_weight > 0 the network is an ensemble, and
every name above gets the prefix ``members.{m}.``, the LSTM members following the encoders
(with the lstm architecture's names: ``members.{members + j}.emb.weight``, ...); the bag
member's are ``bag.net.emb.weight`` and ``bag.net.head.*`` (those of the fasttext
architecture, stored divided by bag_lr_scale); the naive Bayes member's are ``nb.delta``
[V + nb_buckets, K] and ``nb.bias`` [K] (stored divided by nb_lr_scale) and the buffer
``nb.ratios`` [V + nb_buckets, K]; with nb_c > 0 (fitted before training, naive_bayes.py)
only the buffers ``nb.coef`` [V + nb_buckets, K] and ``nb.intercept`` [K].

The blocks are zoo.train.layers.PreLNBlock with exact GELU. Attention is bidirectional; padded
positions (attention_mask 0) are never attended to and never pooled, so padding a batch
leaves every example's output unchanged. Pooling takes the hidden state at position 0
("cls": the classification pipeline puts <cls> there), the mean over real tokens ("mean") or
each feature's largest value over them ("max").
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo.plugin import PreLNBlock, check_length, init_gpt2, key_mask
from zoo.plugin import TaskSpec, ZooError
from zoo.plugins.encoder.naive_bayes import FittedNaiveBayes, NaiveBayesBag
from zoo.plugins.encoder.shares import fit_shares


class Encoder(nn.Module):
    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task not in ("classification", "next-item", "masked-language-modeling"):
            raise ValueError(f"the encoder has no {spec.task} head")
        if spec.task == "classification" and not spec.num_classes:
            raise ValueError("classification needs num_classes")
        self.cfg, self.task = cfg, spec.task
        self.tok_emb = nn.Embedding(spec.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.emb_ln = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(
            PreLNBlock(cfg.n_embd, cfg.n_head, cfg.mlp_ratio * cfg.n_embd, dropout=cfg.dropout,
                       bias=cfg.bias)
            for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        outputs = spec.num_classes if spec.task == "classification" else spec.vocab_size
        self.head = nn.Linear(cfg.n_embd, outputs)
        init_gpt2(self, cfg.n_layer)
        if spec.task in ("next-item", "masked-language-modeling") and cfg.tie_weights:
            self.head.weight = self.tok_emb.weight

    def hidden(self, input_ids, attention_mask):  # [B, T], [B, T] -> [B, T, C]
        pos = torch.arange(check_length(input_ids, self.cfg.block_size), device=input_ids.device)
        x = self.drop(self.emb_ln(self.tok_emb(input_ids) + self.pos_emb(pos)))
        keep = key_mask(attention_mask)
        for block in self.blocks:
            x = block(x, keep)
        return self.ln_f(x)

    def pool(self, h, attention_mask):  # [B, T, C] -> [B, C]
        if self.cfg.pooling == "cls":
            return h[:, 0]
        if self.cfg.pooling == "max":  # each feature's largest value over the real tokens
            real = attention_mask.bool().unsqueeze(-1)
            return h.masked_fill(~real, torch.finfo(h.dtype).min).amax(dim=1)
        weights = attention_mask.to(h.dtype).unsqueeze(-1)  # [B, T, 1]
        return (h * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        h = self.hidden(input_ids, attention_mask)
        if self.task == "masked-language-modeling":
            return self.head(self.drop(h))  # [B, T, V]
        return self.head(self.drop(self.pool(h, attention_mask)))  # [B, K]


class ScaledBag(nn.Module):
    """The fasttext network, parametrised so that Adam's steps move it `scale` times further:
    it computes with scale * (stored weights), and Adam's step on the stored weights does not
    depend on their scale."""

    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        from zoo.plugins.fasttext import FastTextConfig
        from zoo.plugins.fasttext.model import FastText

        self.scale = cfg.bag_lr_scale
        net = FastText(FastTextConfig(dim=cfg.bag_dim, buckets=cfg.bag_buckets,
                                      block_size=cfg.block_size), spec)
        with torch.no_grad():
            net.emb.weight.div_(self.scale)
        self.net = net

    def forward(self, input_ids, attention_mask):  # [B, T] -> [B, K]
        mean = self.net.emb(self.net.features(input_ids, attention_mask)) * self.scale
        return self.net.head(mean) * self.scale


def lstm_member(cfg, spec: TaskSpec) -> nn.Module:
    from zoo.plugins.lstm import LSTMConfig
    from zoo.plugins.lstm.model import BiLSTM

    return BiLSTM(LSTMConfig(n_embd=cfg.n_embd, hidden=cfg.lstm_hidden, n_layer=cfg.lstm_layers,
                             dropout=cfg.dropout, block_size=cfg.block_size), spec)


class EncoderEnsemble(nn.Module):
    """`members` encoders and optionally LSTM members, a bag member and a naive Bayes member,
    trained side by side on the same batches. In training it returns every member's logits
    [B, M, K]; the task's cross entropy scores each against the same target, so each member
    learns as if alone. In evaluation it returns the log of the weighted mean of their
    probabilities [B, K]: the bag member has bag_weight, the naive Bayes member nb_weight,
    and the encoders and LSTMs share the rest equally. With fit_shares, `calibrate` fits the
    shares of the four groups (encoders, LSTMs, bag, naive Bayes) on validation instead, and
    they are saved with the weights."""

    def __init__(self, cfg, spec: TaskSpec):
        super().__init__()
        if spec.task != "classification":
            raise ZooError(f"an encoder ensemble (members > 1, lstm_members, bag_dim or "
                           f"nb_weight > 0) serves classification only, not {spec.task}; set "
                           "members=1, lstm_members=0, bag_dim=0 and nb_weight=0")
        self.members = nn.ModuleList([*(Encoder(cfg, spec) for _ in range(cfg.members)),
                                      *(lstm_member(cfg, spec) for _ in range(cfg.lstm_members))])
        self.bag = ScaledBag(cfg, spec) if cfg.bag_dim else None
        naive_bayes = FittedNaiveBayes if cfg.nb_c else NaiveBayesBag
        self.nb = naive_bayes(cfg, spec) if cfg.nb_weight else None
        others = [(self.bag, cfg.bag_weight), (self.nb, cfg.nb_weight)]
        encoders_share = 1.0 - sum(weight for net, weight in others if net is not None)
        weights = [encoders_share / len(self.members)] * len(self.members)
        weights += [weight for net, weight in others if net is not None]
        self.register_buffer("weights", torch.tensor(weights), persistent=cfg.fit_shares)
        # which group each member belongs to, as a [members, groups] matrix of 1 / group size
        sizes = [cfg.members, cfg.lstm_members, *(1 for net, _ in others if net is not None)]
        grouping = torch.block_diag(*(torch.full((size, 1), 1.0 / size) for size in sizes if size))
        self.register_buffer("grouping", grouping, persistent=False)
        self.fit = cfg.fit_shares

    def prepare(self, input_ids, attention_mask, targets, vocabulary=None) -> None:
        """The training split, seen once before training: the naive Bayes member's counts
        (and its fit, with nb_c > 0)."""
        if self.nb is not None:
            self.nb.prepare(input_ids, attention_mask, targets, vocabulary)

    def calibrate(self, input_ids, attention_mask, targets, batch_size: int = 256) -> None:
        """The validation split, at every validation and before the final evaluation: with
        fit_shares, the groups' shares that score it best (shares.py)."""
        if not self.fit:
            return
        probs = self.group_probabilities(input_ids, attention_mask, batch_size)
        with torch.autocast(probs.device.type, enabled=False):  # shares in float32
            self.weights.copy_(self.grouping @ fit_shares(probs, targets))

    def group_probabilities(self, input_ids, attention_mask, batch_size: int = 256):
        """Each group's mean of its members' probabilities [N, G, K] (groups: encoders,
        LSTMs, bag, naive Bayes), in the split's order; computed in batches of similar
        length, each cut to its longest text (a split comes padded to its longest one)."""
        lengths = attention_mask.sum(dim=1).clamp(min=1)
        order = lengths.argsort(stable=True)
        parts = []
        for rows in order.split(batch_size):
            width = int(lengths[rows].max())
            parts.append(self.member_probabilities(input_ids[rows, :width],
                                                   attention_mask[rows, :width]))
        by_length = torch.cat(parts)
        probs = torch.empty_like(by_length)  # [N, M, K], back in the split's order
        probs[order] = by_length
        with torch.autocast(probs.device.type, enabled=False):  # in float32
            return torch.einsum("nmk,mg->ngk", probs, self.grouping)

    def nets(self) -> list[nn.Module]:
        """Every member, in the order of `weights`."""
        return [*self.members, *(net for net in (self.bag, self.nb) if net is not None)]

    def member_probabilities(self, input_ids, attention_mask):  # -> [B, M, K]
        logits = torch.stack([net(input_ids, attention_mask) for net in self.nets()], dim=1)
        return logits.float().softmax(dim=-1)

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if self.training:  # a member fitted before training has nothing to learn here
            learning = [net for net in self.nets() if getattr(net, "trains", True)]
            return torch.stack([net(input_ids, attention_mask) for net in learning], dim=1)
        probs = self.member_probabilities(input_ids, attention_mask)
        return torch.log((probs * self.weights[:, None]).sum(dim=1))  # [B, K]


def build(cfg, spec: TaskSpec) -> nn.Module:
    alone = not (cfg.bag_dim or cfg.nb_weight or cfg.lstm_members or cfg.fit_shares)
    if cfg.members == 1 and alone:
        return Encoder(cfg, spec)
    return EncoderEnsemble(cfg, spec)
