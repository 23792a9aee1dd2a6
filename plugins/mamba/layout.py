"""The native Mamba in transformers' layout: the config and the weight names of
MambaForCausalLM for a mamba config, both ways.

The networks are the same (RMSNorm eps 1e-5 before each mixer and at the end, the mixer's
projections, convolution, A_log and D under the same names); only the prefixes differ:
``tok_emb`` is ``backbone.embeddings``, ``blocks`` ``backbone.layers``, ``norm_f``
``backbone.norm_f``. transformers' Mamba has no dropout (a run's dropout is off when it
predicts) and no sequence classifier: a classification run has no layout there.

Plain dictionaries of tensors; transformers is imported by the caller, not here."""

from __future__ import annotations

# the native prefixes -> MambaForCausalLM's
PREFIXES = {"tok_emb.": "backbone.embeddings.", "blocks.": "backbone.layers."}
PREFIXES["norm_f."] = "backbone.norm_f."
TASKS = ("language-modeling", "next-item")  # a causal LM's logits, all or the last one


def mamba_mismatch(task: str) -> str | None:
    """Why a mamba run of ``task`` has no MambaForCausalLM layout, or None when it has one."""
    if task not in TASKS:
        return f"transformers' Mamba has no {task} head (MambaForCausalLM only)"
    return None


def hf_config(cfg, vocab_size: int) -> dict:
    """MambaConfig's arguments for the mamba config ``cfg``."""
    return {
        "vocab_size": vocab_size,
        "hidden_size": cfg.n_embd,
        "state_size": cfg.d_state,
        "num_hidden_layers": cfg.n_layer,
        "expand": cfg.expand,
        "conv_kernel": cfg.d_conv,
        "time_step_rank": cfg.rank,
        "use_bias": cfg.bias,
        "use_conv_bias": cfg.conv_bias,
        "layer_norm_epsilon": 1e-5,  # RMSNorm's in zoo.plugin.layers
        "tie_word_embeddings": cfg.tie_weights,
        "use_mambapy": False,  # the plain sequential scan, on any device
    }


def to_hf(state: dict) -> dict:
    """The native weights -> MambaForCausalLM's (the head also when tied: a tied model
    shares it, an untied one needs it)."""
    out = _renamed(state, PREFIXES.items())
    out.setdefault("lm_head.weight", state["tok_emb.weight"])
    return out


def from_hf(hf_state: dict, cfg) -> dict:
    """MambaForCausalLM's weights -> the native names (no head when it is tied)."""
    out = _renamed(hf_state, [(hf, native) for native, hf in PREFIXES.items()])
    if cfg.tie_weights:
        out.pop("lm_head.weight", None)
    return out


def _renamed(state: dict, prefixes) -> dict:
    """``state`` with each name's ``old`` prefix replaced by ``new``, for each (old, new)."""
    out = {}
    for name, tensor in state.items():
        for old, new in prefixes:
            if name.startswith(old):
                name = new + name.removeprefix(old)
        out[name] = tensor
    return out
