"""transformers models behind zoo's module contract: ``forward(input_ids, attention_mask)``
returns logits shaped by the task (see ``zoo.train.model``), the class of each task taken from
transformers' auto mappings (``types.model_types``).

  language-modeling  ...ForCausalLM: logits [B, T, vocab]
  classification     ...ForSequenceClassification: logits [B, classes]; decoders read the
                     last real token (the rightmost one that is not padding), BERT-like
                     encoders their pooler over [CLS], the <cls> token the pipeline puts first
  masked-language-modeling  ...ForMaskedLM: logits [B, T, vocab], or [N, vocab] at the
                     positions a loss reads
  next-item          the language-model head (an encoder's: its masked-LM head) at the last
                     real position: logits [B, vocab]
  seq2seq            ...ForConditionalGeneration (an encoder-decoder) on the pipeline's packed
                     batch (source, then the target's input): logits [B, T, vocab]; the
                     types of CACHED_SEQ2SEQ also decode a token at a time from transformers'
                     key/value cache (``decode``), the others recompute every prefix

The transformers model is the wrapper's ``hf`` attribute, so the weights keep transformers'
names under an ``hf.`` prefix, and ``zoo export`` saves it with ``save_pretrained``.
Where a class computes attention through transformers' attention interface, that is
transformers' SDPA path registered as the attention implementation "zoo" with
``zoo.train.torch_model.attention``'s precision rule (fp32 attention under CPU bf16 autocast),
so these models compute as zoo's own do.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
import transformers
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask
from zoo.plugins.transformers.configs import NO_CACHE
from zoo.plugins.transformers.types import model_types

from zoo.plugin import TaskSpec, ZooError
from zoo.plugin.layers import split_source_target

ATTENTION = "zoo"


def model_class(model_type: str, task: str) -> type[Any]:
    """The transformers class of a model type for a zoo task (``types.model_types``)."""
    return getattr(transformers, model_types()[model_type][task])


def _zoo_attention(module, query, key, value, attention_mask, **kwargs):
    """transformers' SDPA attention under zoo's precision rule (``zoo.train.torch_model.attention``):
    under bf16 autocast on the CPU it computes in fp32, whose backward is several times
    faster there than bf16's at these sizes. The test is autocast itself, not the query's
    dtype: Llama's rotary embedding hands SDPA fp32 queries, which autocast would cast down."""
    if query.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        if attention_mask is not None and attention_mask.is_floating_point():
            attention_mask = attention_mask.float()
        with torch.autocast("cpu", enabled=False):
            return sdpa_attention_forward(
                module, query.float(), key.float(), value.float(), attention_mask, **kwargs
            )
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


transformers.AttentionInterface.register(ATTENTION, _zoo_attention)
transformers.AttentionMaskInterface.register(ATTENTION, sdpa_mask)
transformers.utils.logging.disable_progress_bar()  # no bar for loading a tiny checkpoint


class TransformersModel(nn.Module):
    """A transformers model with zoo's forward: logits by task."""

    def __init__(self, hf: transformers.PreTrainedModel, task: str):
        super().__init__()
        self.hf, self.task = hf, task
        accepts = inspect.signature(hf.forward).parameters
        # no key-value cache while training (a causal model would build one every pass)
        self.options = {"use_cache": False} if "use_cache" in accepts else {}
        self.takes_mask = "attention_mask" in accepts  # Mamba, RWKV: no padding mask
        self.outputs_at_positions = task == "masked-language-modeling"

    def forward(self, input_ids, attention_mask=None, positions=None):
        if self.task == "seq2seq":  # a packed batch: source, then the target's input
            source, source_mask, target, target_mask = split_source_target(
                input_ids, attention_mask
            )
            return self.hf(
                input_ids=source,  # [B, S]
                attention_mask=source_mask,
                decoder_input_ids=target,  # [B, T]
                decoder_attention_mask=target_mask,
                **self.options,
            ).logits  # [B, T, vocab]
        mask = {"attention_mask": attention_mask} if self.takes_mask else {}
        logits = self.hf(input_ids=input_ids, **mask, **self.options).logits
        if positions is not None:  # masked LM, only where the loss reads (zoo.train.model)
            return logits[positions]  # [N, vocab]
        if self.task != "next-item":
            return logits  # [B, T, vocab] or [B, classes]
        if attention_mask is None:
            last = torch.full((logits.shape[0],), logits.shape[1] - 1, device=logits.device)
        else:
            last = attention_mask.long().sum(dim=1) - 1
        return logits[torch.arange(logits.shape[0], device=logits.device), last]  # [B, vocab]


# Encoder-decoders whose cached decoding gives the logits of recomputing the whole prefix
# (tested for each): their decoders find positions from the cache's length.
CACHED_SEQ2SEQ = frozenset({"bart", "marian", "mbart", "pegasus", "t5"})


@dataclass
class Seq2SeqCache:
    """The encoded source [B, S, C] and its mask [B, S], and transformers' cache of the
    decoder's keys and values."""

    memory: torch.Tensor
    source_mask: torch.Tensor
    past: Any = None


class CachedSeq2Seq(TransformersModel):
    """An encoder-decoder that decodes incrementally (``zoo.train.model``'s contract): the
    source is encoded once, then each call runs the decoder on one more token per row."""

    def __init__(self, hf: transformers.PreTrainedModel, task: str):
        super().__init__(hf, task)
        # transformers 5 renames past_key_values to cache (both accepted until 5.40)
        accepts = inspect.signature(hf.forward).parameters
        self.cache_name = "cache" if "cache" in accepts else "past_key_values"

    def decode(self, input_ids, cache: Seq2SeqCache | None = None, pads=None):
        """Logits [B, V] for the next target token, and the cache. A new cache starts from a
        prompt [B, S + 1]: the source left-padded by ``pads`` [B], then the target's first
        token; then each call gives one more token per row [B, 1]."""
        if cache is None:
            source, source_mask = right_aligned(input_ids[:, :-1], pads)
            encoder = self.hf.get_encoder()
            memory = encoder(input_ids=source, attention_mask=source_mask).last_hidden_state
            cache, input_ids = Seq2SeqCache(memory, source_mask), input_ids[:, -1:]
        out = self.hf(
            encoder_outputs=transformers.modeling_outputs.BaseModelOutput(cache.memory),
            attention_mask=cache.source_mask,
            decoder_input_ids=input_ids,
            use_cache=True,
            **{self.cache_name: cache.past},
        )
        past = out[self.cache_name]
        return out.logits[:, -1], Seq2SeqCache(cache.memory, cache.source_mask, past)

    def reorder_cache(self, cache: Seq2SeqCache, rows):
        """The cache of the rows ``rows`` [N] (beam search's surviving hypotheses)."""
        cache.past.reorder_cache(rows)  # transformers reorders in place
        memory, source_mask = (
            cache.memory.index_select(0, rows),
            cache.source_mask.index_select(0, rows),
        )
        return Seq2SeqCache(memory, source_mask, cache.past)


def right_aligned(source, pads):
    """A left-padded source [B, S] (``pads`` [B] pad tokens first) moved to the left, its
    padding after it, and its mask: the layout the model trained on, where an encoder with
    absolute positions (BART's) numbers the first real token 0."""
    S = source.shape[1]
    pads = (
        torch.zeros(source.shape[0], dtype=torch.long, device=source.device)
        if pads is None
        else pads
    )
    index = (torch.arange(S, device=source.device)[None, :] + pads[:, None]) % S
    real = torch.arange(S, device=source.device)[None, :] < (S - pads)[:, None]
    return source.gather(1, index), real.long()


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


def attention_of(hf_class: type, config) -> str | None:
    """zoo's attention where the class computes attention through transformers' attention
    interface; else the class's own choice (SDPA or eager; none for Mamba or RWKV). Attention
    scores capped with a tanh (Gemma 2's ``attn_logit_softcapping``) are transformers'
    eager attention: SDPA has no such cap."""
    if getattr(config, "attn_logit_softcapping", None):
        return "eager"
    return ATTENTION if getattr(hf_class, "_supports_attention_backend", False) else None


def build(cfg, spec: TaskSpec) -> TransformersModel:
    """A new model from the config, or the checkpoint's weights when ``cfg.pretrained``."""
    hf_class = model_class(cfg.model_type, spec.task)
    task_fields = {"pad_token_id": spec.pad_id}
    if spec.task == "classification":
        task_fields["num_labels"] = spec.class_count
    if spec.task == "language-modeling":  # an encoder's LM class (BertLMHeadModel) needs it
        task_fields["is_decoder"] = True
    config = cfg.transformers_config(spec.vocab_size, **task_fields)
    if cfg.pretrained:
        try:  # safetensors only: a pickled checkpoint would run code
            hf = hf_class.from_pretrained(
                cfg.pretrained,
                config=config,
                use_safetensors=True,
                attn_implementation=attention_of(hf_class, config),
            )
        except (OSError, ValueError, RuntimeError) as exc:  # mismatched sizes, missing files
            reason = _first_line(exc)
            if "ignore_mismatched_sizes" in reason:  # transformers points at a log above
                reason = (
                    "some of its weights have other shapes than the model's (a "
                    "classification head for another number of classes, say)"
                )
            raise ZooError(
                f"the checkpoint {cfg.pretrained!r} does not load into a "
                f"{cfg.architecture} model of this config: {reason}; "
                "set the architecture's sizes as the checkpoint has them (or leave "
                "them unset)"
            ) from None
        if spec.vocab_size > hf.get_input_embeddings().num_embeddings:
            hf.resize_token_embeddings(spec.vocab_size)  # a tokenizer with more tokens
    else:
        hf = hf_class._from_config(config, attn_implementation=attention_of(hf_class, config))
    # on for generation after export (training passes use_cache=False), unless a forward
    # with it computes something else (configs.NO_CACHE)
    hf.config.use_cache = cfg.model_type not in NO_CACHE
    if spec.task == "seq2seq" and cfg.model_type in CACHED_SEQ2SEQ:
        return CachedSeq2Seq(hf, spec.task)
    return TransformersModel(hf, spec.task)
