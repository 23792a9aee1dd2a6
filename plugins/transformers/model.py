"""transformers models behind zoo's module contract: ``forward(input_ids, attention_mask)``
returns logits shaped by the task (see ``zoo.train.model``).

  language-modeling  ...ForCausalLM: logits [B, T, vocab]
  classification     ...ForSequenceClassification: logits [B, classes]; GPT-2 and Llama read
                     the last real token (the rightmost one that is not padding), BERT its
                     pooler over [CLS], the <cls> token the pipeline puts first
  masked-language-modeling  BERT's ...ForMaskedLM: logits [B, T, vocab], or [N, vocab] at
                     the positions a loss reads
  next-item          the language-model head (BERT: its masked-LM head) at the last real
                     position: logits [B, vocab]

The transformers model is the wrapper's ``hf`` attribute, so the weights keep transformers'
names under an ``hf.`` prefix, and ``zoo export`` saves it with ``save_pretrained``.
Attention is transformers' SDPA path registered as the attention implementation "zoo" with
``zoo.train.torch_model.attention``'s precision rule (fp32 attention under CPU bf16 autocast), so these
models compute as zoo's own do.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import transformers
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask

from zoo.plugin import TaskSpec, ZooError

ATTENTION = "zoo"
CLASSES = {  # architecture -> task -> transformers model class
    "gpt2": {
        "language-modeling": transformers.GPT2LMHeadModel,
        "classification": transformers.GPT2ForSequenceClassification,
        "next-item": transformers.GPT2LMHeadModel,
    },
    "llama": {
        "language-modeling": transformers.LlamaForCausalLM,
        "classification": transformers.LlamaForSequenceClassification,
        "next-item": transformers.LlamaForCausalLM,
    },
    "bert": {
        "classification": transformers.BertForSequenceClassification,
        "next-item": transformers.BertForMaskedLM,
        "masked-language-modeling": transformers.BertForMaskedLM,
    },
}


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
        self.causal = not isinstance(hf, transformers.BertPreTrainedModel)
        self.outputs_at_positions = task == "masked-language-modeling"

    def forward(self, input_ids, attention_mask=None, positions=None):
        options = {"use_cache": False} if self.causal else {}
        if positions is not None:  # masked LM, only where the loss reads (zoo.train.model)
            hidden = self.hf.bert(input_ids=input_ids, attention_mask=attention_mask)
            return self.hf.cls(hidden.last_hidden_state[positions])  # [N, vocab]
        if self.task != "next-item":
            return self.hf(input_ids=input_ids, attention_mask=attention_mask, **options).logits
        hidden = self.hf.base_model(
            input_ids=input_ids, attention_mask=attention_mask, **options
        ).last_hidden_state  # [B, T, C]
        if attention_mask is None:
            last = torch.full((hidden.shape[0],), hidden.shape[1] - 1, device=hidden.device)
        else:
            last = attention_mask.long().sum(dim=1) - 1
        pooled = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]  # [B, C]
        head = self.hf.get_output_embeddings() if self.causal else self.hf.cls  # BERT: MLM head
        return head(pooled)  # [B, vocab]


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


def build(cfg, spec: TaskSpec) -> TransformersModel:
    """A new model from the config, or the checkpoint's weights when ``cfg.pretrained``."""
    model_class = CLASSES[cfg.architecture][spec.task]
    task_fields = {"pad_token_id": spec.pad_id}
    if spec.task == "classification":
        task_fields["num_labels"] = spec.num_classes
    config = cfg.transformers_config(spec.vocab_size, **task_fields)
    if cfg.pretrained:
        try:  # safetensors only: a pickled checkpoint would run code
            hf = model_class.from_pretrained(
                cfg.pretrained, config=config, use_safetensors=True, attn_implementation=ATTENTION
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
        hf = model_class._from_config(config, attn_implementation=ATTENTION)
    hf.config.use_cache = True  # for generation after export; training passes use_cache=False
    return TransformersModel(hf, spec.task)
