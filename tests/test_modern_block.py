"""The modern decoder (rotary positions, RMSNorm, SwiGLU, grouped-query attention, no
biases) equals transformers' LlamaForCausalLM given the same weights, and with experts
MixtralForCausalLM; the default decoder keeps GPT-2's block. The encoder's modern
settings build the same blocks: with Llama's weights and a padding mask in place of the
causal one, it computes what Llama's layers do."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

MODERN = dict(
    n_layer=2,
    n_head=4,
    n_kv_head=2,
    n_embd=16,
    block_size=24,
    position="rotary",
    norm="rms",
    mlp="swiglu",
    mlp_width=24,
    bias=False,
)
VOCAB = 13


def randomised(model):
    """Random (not initial) values everywhere, so every weight matters to the logits."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return model.eval()


def native_twin(hf_model, cfg):
    from zoo.plugins.decoder.llama import from_hf
    from zoo.plugins.decoder.model import build

    from zoo.plugin import TaskSpec

    native = build(cfg, TaskSpec("language-modeling", VOCAB)).eval()
    missing, unexpected = native.load_state_dict(from_hf(hf_model.state_dict(), cfg), strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}  # tied to tok_emb
    return native


def test_the_modern_decoder_equals_llama_with_the_same_weights(one_thread):
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.llama import hf_config

    cfg = DecoderConfig(**MODERN)
    hf = randomised(
        transformers.LlamaForCausalLM(transformers.LlamaConfig(**hf_config(cfg, VOCAB)))
    )
    native = native_twin(hf, cfg)
    ids = torch.randint(0, VOCAB, (2, 19))
    with torch.no_grad():
        torch.testing.assert_close(native(ids), hf(ids).logits, rtol=1e-5, atol=1e-5)


def test_experts_equal_mixtral_with_the_same_weights_and_its_balancing_loss(one_thread):
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.llama import hf_config

    cfg = DecoderConfig(**MODERN, n_expert=4, expert_top_k=2, aux_loss_weight=0.02)
    hf_cfg = transformers.MixtralConfig(**hf_config(cfg, VOCAB), output_router_logits=True)
    hf = randomised(transformers.MixtralForCausalLM(hf_cfg))
    native = native_twin(hf, cfg)
    ids = torch.randint(0, VOCAB, (2, 19))
    with torch.no_grad():
        expected = hf(ids)
        torch.testing.assert_close(native(ids), expected.logits, rtol=1e-5, atol=1e-5)
        # transformers pools the layers' counts; one layer at a time it is the same loss
        from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func

        per_layer = [load_balancing_loss_func((r,), 4, 2) for r in expected.router_logits]
        torch.testing.assert_close(
            native.auxiliary_loss(), 0.02 * torch.stack(per_layer).mean(), rtol=1e-5, atol=1e-6
        )


def test_the_modern_encoder_equals_llamas_layers_without_the_causal_mask(one_thread):
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.llama import hf_config, to_hf
    from zoo.plugins.encoder import EncoderConfig
    from zoo.plugins.encoder.model import build

    from zoo.plugin import TaskSpec

    shape = DecoderConfig(**MODERN)  # Llama's config and names for the same blocks
    encoder = randomised(
        build(
            EncoderConfig(**MODERN, dropout=0.0), TaskSpec("classification", VOCAB, num_classes=2)
        )
    )
    assert encoder.pos_emb is None and not any(
        ".bias" in n for n, _ in encoder.named_parameters() if "head" not in n
    )
    hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(**hf_config(shape, VOCAB)))
    state = {k: v for k, v in encoder.state_dict().items() if not k.startswith(("head", "emb_ln"))}
    missing, unexpected = hf.load_state_dict(to_hf(state, shape), strict=False)
    assert not missing and not unexpected
    ids = torch.randint(0, VOCAB, (3, 19))
    mask = torch.ones_like(ids)
    mask[0, 11:] = 0  # a padded row: its padding is never attended to
    keep = mask.bool()[:, None, None, :].expand(3, 1, 19, 19)  # no causal mask: every real key
    with torch.no_grad():
        embedded = encoder.emb_ln(encoder.tok_emb(ids))  # the encoder's embedding norm
        expected = hf.eval().model(inputs_embeds=embedded, attention_mask=keep).last_hidden_state
        torch.testing.assert_close(encoder.hidden(ids, mask), expected, rtol=1e-5, atol=1e-5)


def test_the_default_decoder_keeps_gpt2s_block_and_its_cached_decoding():
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.model import build

    from zoo.plugin import TaskSpec

    default = build(
        DecoderConfig(n_layer=1, n_embd=16, n_head=2), TaskSpec("language-modeling", VOCAB)
    )
    assert callable(default.decode) and default.auxiliary_loss() is None
    names = {name for name, _ in default.named_parameters()}
    assert {"pos_emb.weight", "blocks.0.ln1.bias", "blocks.0.mlp.fc.weight"} <= names
    assert default.blocks[0].attn.qkv.weight.shape == (48, 16)
    modern = build(DecoderConfig(**MODERN), TaskSpec("language-modeling", VOCAB))
    assert modern.decode is None  # generation runs the whole context
    assert modern.blocks[0].attn.qkv.weight.shape == (16 + 2 * 8, 16)  # 4 q heads, 2 kv heads


def test_each_token_goes_to_its_top_k_experts_weighted_by_the_router(one_thread):
    from zoo.plugin.layers import MixtureOfExperts

    torch.manual_seed(0)
    experts = [torch.nn.Linear(4, 4, bias=False) for _ in range(3)]
    moe = MixtureOfExperts(4, experts, top_k=2)
    x = torch.randn(2, 5, 4)
    with torch.no_grad():
        got = moe(x)
        probs = moe.router(x).softmax(-1)  # [2, 5, 3]
        for b in range(2):
            for t in range(5):
                top = probs[b, t].topk(2)
                weights = top.values / top.values.sum()
                expected = sum(w * experts[e](x[b, t]) for w, e in zip(weights, top.indices))
                torch.testing.assert_close(got[b, t], expected)
    # every token choosing one expert: the balancing loss is E x k x its mean probability
    share = torch.tensor([1.0, 0.0, 0.0])
    probs = torch.tensor([[0.6, 0.3, 0.1], [0.8, 0.1, 0.1]])
    from zoo.plugin.layers import load_balancing_loss

    chosen = torch.zeros(2, 1, dtype=torch.long)
    assert float(load_balancing_loss(probs, chosen, 3)) == pytest.approx(
        3 * (share @ probs.mean(0))
    )


def test_training_adds_the_balancing_loss_reports_the_tasks_and_records_it(one_thread):
    import numpy as np
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.model import build

    from zoo.core.loading import task_loss
    from zoo.core.names import get_task
    from zoo.plugin import TaskSpec
    from zoo.train.torch_model import as_model

    ids = np.random.default_rng(0).integers(0, VOCAB, size=(2, 9))
    inputs, targets = ids[:, :-1], ids[:, 1:]
    steps = {}
    for weight in (0.0, 10.0):
        torch.manual_seed(0)
        cfg = DecoderConfig(**MODERN, n_expert=4, aux_loss_weight=weight)
        loss = task_loss(get_task("language-modeling"))
        model = as_model(build(cfg, TaskSpec("language-modeling", VOCAB)), loss=loss)
        model.configure_optimizer(lr=1e-2, weight_decay=0.0)
        reported = model.train_step(inputs, targets, 1e-2)
        router = model.module.blocks[0].mlp.router.weight.detach().clone()
        steps[weight] = reported, model.step_figures(), router
    (loss0, figures0, router0), (loss10, figures10, router10) = steps[0.0], steps[10.0]
    assert loss0 == pytest.approx(loss10, rel=1e-6)  # the task's loss, before the step
    assert figures0["train_aux_loss"] == 0.0 and figures10["train_aux_loss"] > 0
    assert not torch.allclose(router0, router10)  # the balancing loss trained the router
