"""The modern decoder in transformers' Llama layout (and Mixtral's, with experts): the
config and the weight names of LlamaForCausalLM / MixtralForCausalLM for a decoder config
whose blocks are Llama's (rotary positions, RMSNorm, SwiGLU, no biases), both ways.

Plain dictionaries of tensors; transformers is imported by the caller, not here."""

from __future__ import annotations

import torch

# the native block's names -> Llama's, under model.layers.{i}.
BLOCK_NAMES = {
    "ln1.weight": "input_layernorm.weight",
    "ln2.weight": "post_attention_layernorm.weight",
    "attn.proj.weight": "self_attn.o_proj.weight",
    "mlp.gate.weight": "mlp.gate_proj.weight",
    "mlp.fc.weight": "mlp.up_proj.weight",
    "mlp.proj.weight": "mlp.down_proj.weight",
}
TOP_NAMES = {"tok_emb.weight": "model.embed_tokens.weight", "ln_f.weight": "model.norm.weight"}


def llama_mismatch(cfg) -> str | None:
    """Why a decoder config has no Llama (or Mixtral) layout, or None when it has one."""
    wanted = {"position": "rotary", "norm": "rms", "mlp": "swiglu", "bias": False}
    for name, value in wanted.items():
        if getattr(cfg, name) != value:
            return f"Llama's layout needs {name} = {value!r} (this run has {getattr(cfg, name)!r})"
    return None


def hf_config(cfg, vocab_size: int) -> dict:
    """LlamaConfig's (or MixtralConfig's) arguments for the decoder config ``cfg``."""
    values = {
        "vocab_size": vocab_size,
        "hidden_size": cfg.n_embd,
        "intermediate_size": cfg.mlp_width or 4 * cfg.n_embd,
        "num_hidden_layers": cfg.n_layer,
        "num_attention_heads": cfg.n_head,
        "num_key_value_heads": cfg.n_kv_head or cfg.n_head,
        "max_position_embeddings": cfg.block_size,
        "rms_norm_eps": 1e-5,  # RMSNorm's in zoo.plugin.layers
        "rope_parameters": {"rope_type": "default", "rope_theta": cfg.rope_base},
        "tie_word_embeddings": cfg.tie_weights,
        "attention_dropout": 0.0,
    }
    if cfg.n_expert:
        values |= {
            "num_local_experts": cfg.n_expert,
            "num_experts_per_tok": cfg.expert_top_k,
            "router_aux_loss_coef": cfg.aux_loss_weight,
        }
    return values


def to_hf(state: dict, cfg) -> dict:
    """The decoder's weights (native names) -> LlamaForCausalLM's (MixtralForCausalLM's
    with experts). The fused qkv splits into q, k and v; experts stack into 3-d tensors."""
    C = cfg.n_embd
    kv = (cfg.n_kv_head or cfg.n_head) * (C // cfg.n_head)
    out = {TOP_NAMES[k]: v for k, v in state.items() if k in TOP_NAMES}
    out["lm_head.weight"] = state.get("lm_head.weight", state["tok_emb.weight"])
    for i in range(cfg.n_layer):
        prefix, hf = f"blocks.{i}.", f"model.layers.{i}."
        q, k, v = state[prefix + "attn.qkv.weight"].split([C, kv, kv])
        out |= {hf + "self_attn.q_proj.weight": q, hf + "self_attn.k_proj.weight": k}
        out[hf + "self_attn.v_proj.weight"] = v
        for name, hf_name in BLOCK_NAMES.items():
            if prefix + name in state:
                out[hf + hf_name] = state[prefix + name]
        if cfg.n_expert:
            out |= experts_to_hf(state, prefix + "mlp.", hf + "mlp.", cfg.n_expert)
    return out


def experts_to_hf(state: dict, prefix: str, hf: str, experts: int) -> dict:
    """A block's router and experts -> Mixtral's gate and fused expert tensors."""
    gate_up = [
        torch.cat(
            [state[f"{prefix}experts.{e}.gate.weight"], state[f"{prefix}experts.{e}.fc.weight"]]
        )
        for e in range(experts)
    ]
    down = [state[f"{prefix}experts.{e}.proj.weight"] for e in range(experts)]
    return {
        hf + "gate.weight": state[prefix + "router.weight"],
        hf + "experts.gate_up_proj": torch.stack(gate_up),  # [E, 2H, C]
        hf + "experts.down_proj": torch.stack(down),  # [E, C, H]
    }


def from_hf(hf_state: dict, cfg) -> dict:
    """LlamaForCausalLM's (or MixtralForCausalLM's) weights -> the decoder's names."""
    state = {native: hf_state[hf] for native, hf in TOP_NAMES.items()}
    if not cfg.tie_weights:
        state["lm_head.weight"] = hf_state["lm_head.weight"]
    for i in range(cfg.n_layer):
        prefix, hf = f"blocks.{i}.", f"model.layers.{i}."
        qkv = [hf_state[f"{hf}self_attn.{p}_proj.weight"] for p in "qkv"]
        state[prefix + "attn.qkv.weight"] = torch.cat(qkv)
        for name, hf_name in BLOCK_NAMES.items():
            if hf + hf_name in hf_state:
                state[prefix + name] = hf_state[hf + hf_name]
        if cfg.n_expert:
            state[prefix + "mlp.router.weight"] = hf_state[hf + "mlp.gate.weight"]
            gate_up, down = (
                hf_state[hf + "mlp.experts.gate_up_proj"],
                hf_state[hf + "mlp.experts.down_proj"],
            )
            for e in range(cfg.n_expert):
                gate, up = gate_up[e].chunk(2)
                state[f"{prefix}mlp.experts.{e}.gate.weight"] = gate
                state[f"{prefix}mlp.experts.{e}.fc.weight"] = up
                state[f"{prefix}mlp.experts.{e}.proj.weight"] = down[e]
    return state
