"""The encoder-decoder in transformers' Pegasus layout: PegasusForConditionalGeneration is
the same network (pre-LN encoder and decoder layers, cross-attention, a final LayerNorm on
each side, GELU MLPs, position tables added to unscaled token embeddings, LayerNorm eps
1e-5), so an encdec run's weights load into it and compute the same logits.

What differs is only how the weights are cut: Pegasus has separate q, k and v projections
where encdec has one fused ``qkv`` (rows [q; k; v]), and always has biases (a run with
``bias=false`` gets zero biases, which compute what no bias does). Pegasus's position
tables are frozen sinusoids by default; an encdec run's learned tables replace them (they
are ordinary weights of the checkpoint).

Plain dictionaries of tensors; transformers is imported by the caller, not here."""

from __future__ import annotations

import torch

# a block's layers, encdec's name -> Pegasus's, under model.{encoder,decoder}.layers.{i}.
NORMS = {"ln1": "self_attn_layer_norm", "ln_cross": "encoder_attn_layer_norm"}
NORMS["ln2"] = "final_layer_norm"
LINEARS = {"attn.proj": "self_attn.out_proj", "cross.proj": "encoder_attn.out_proj"}
LINEARS |= {"mlp.fc": "fc1", "mlp.proj": "fc2"}
ATTENTIONS = {"attn": "self_attn", "cross": "encoder_attn"}


def hf_config(cfg, vocab_size: int, *, pad_id: int, end_id: int) -> dict:
    """PegasusConfig's arguments for the encdec config ``cfg``: ``end_id`` (zoo's ``<cls>``)
    starts every target and ends it."""
    return {
        "vocab_size": vocab_size,
        "d_model": cfg.n_embd,
        "encoder_layers": cfg.encoder_layers,
        "decoder_layers": cfg.decoder_layers,
        "encoder_attention_heads": cfg.n_head,
        "decoder_attention_heads": cfg.n_head,
        "encoder_ffn_dim": cfg.mlp_ratio * cfg.n_embd,
        "decoder_ffn_dim": cfg.mlp_ratio * cfg.n_embd,
        "max_position_embeddings": cfg.block_size,
        "activation_function": "gelu",  # zoo's MLP: exact GELU
        "dropout": cfg.dropout,
        "attention_dropout": cfg.dropout,
        "activation_dropout": 0.0,
        "scale_embedding": False,
        "tie_word_embeddings": cfg.tie_weights,
        "pad_token_id": pad_id,
        "eos_token_id": end_id,
        "decoder_start_token_id": end_id,
        "forced_eos_token_id": None,  # zoo stops at max_new_tokens without an end token
    }


def to_hf(state: dict, cfg) -> dict:
    """encdec's weights (its own names) -> PegasusForConditionalGeneration's."""
    C = cfg.n_embd

    def get(name: str, width: int) -> torch.Tensor:  # zeros where bias=false left one out
        return state[name] if name in state else torch.zeros(width)

    out = {
        # one table for both sides (tied to lm_head too where tie_weights)
        "model.shared.weight": state["tok_emb.weight"],
        "model.encoder.embed_tokens.weight": state["tok_emb.weight"],
        "model.decoder.embed_tokens.weight": state["tok_emb.weight"],
        "model.encoder.embed_positions.weight": state["enc_pos.weight"],
        "model.decoder.embed_positions.weight": state["dec_pos.weight"],
        "lm_head.weight": state.get("lm_head.weight", state["tok_emb.weight"]),
        "final_logits_bias": torch.zeros(1, state["tok_emb.weight"].shape[0]),
    }
    for side, ln in (("encoder", "enc_ln"), ("decoder", "dec_ln")):
        out[f"model.{side}.layer_norm.weight"] = state[f"{ln}.weight"]
        out[f"model.{side}.layer_norm.bias"] = get(f"{ln}.bias", C)
    sides = (("encoder", cfg.encoder_layers), ("decoder", cfg.decoder_layers))
    for side, layers in sides:
        for i in range(layers):
            ours, theirs = f"{side}.{i}.", f"model.{side}.layers.{i}."
            present = {k.removeprefix(ours).split(".")[0] for k in state if k.startswith(ours)}
            for a, b in NORMS.items():
                if a in present:
                    out[f"{theirs}{b}.weight"] = state[f"{ours}{a}.weight"]
                    out[f"{theirs}{b}.bias"] = get(f"{ours}{a}.bias", C)
            for a, b in LINEARS.items():
                if a.split(".")[0] in present:
                    weight = state[f"{ours}{a}.weight"]
                    out[f"{theirs}{b}.weight"] = weight
                    out[f"{theirs}{b}.bias"] = get(f"{ours}{a}.bias", weight.shape[0])
            for a, b in ATTENTIONS.items():
                if a in present:
                    out |= _split_qkv(state, f"{ours}{a}.qkv", f"{theirs}{b}", C)
    return out


def _split_qkv(state: dict, ours: str, theirs: str, width: int) -> dict:
    """A fused projection (rows [q; k; v]) -> Pegasus's q_proj, k_proj, v_proj."""
    weights = state[f"{ours}.weight"].split(width)
    bias = state.get(f"{ours}.bias")
    biases = bias.split(width) if bias is not None else [torch.zeros(width)] * 3
    out = {}
    for part, weight, b in zip("qkv", weights, biases):
        out[f"{theirs}.{part}_proj.weight"] = weight
        out[f"{theirs}.{part}_proj.bias"] = b
    return out
