"""zoo.train.layers, the torch layers the built-in architectures share: the attention precision
rule, and the parameter names every saved run depends on."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import skip_where_amx_splits_bf16_sums
from zoo.plugins.decoder import DecoderConfig
from zoo.plugins.decoder.model import build as build_decoder
from zoo.plugins.digits import DigitsConfig
from zoo.plugins.digits.model import build as build_digits
from zoo.plugins.encoder import EncoderConfig
from zoo.plugins.encoder.model import build as build_encoder

from zoo.train import layers
from zoo.train.model import TaskSpec

BLOCK = [
    "ln1.weight",
    "ln1.bias",
    "attn.qkv.weight",
    "attn.qkv.bias",
    "attn.proj.weight",
    "attn.proj.bias",
    "ln2.weight",
    "ln2.bias",
    "mlp.fc.weight",
    "mlp.fc.bias",
    "mlp.proj.weight",
    "mlp.proj.bias",
]
MODELS = {
    "decoder": (
        lambda: build_decoder(
            DecoderConfig(n_layer=2, n_head=2, n_embd=8, block_size=4, tie_weights=False),
            TaskSpec("classification", 10, 3),
        ),
        [
            "tok_emb.weight",
            "pos_emb.weight",
            *(f"blocks.{i}.{n}" for i in (0, 1) for n in BLOCK),
            "ln_f.weight",
            "ln_f.bias",
            "lm_head.weight",
            "cls_head.weight",
            "cls_head.bias",
        ],
    ),
    "encoder": (
        lambda: build_encoder(
            EncoderConfig(n_layer=2, n_head=2, n_embd=8, block_size=4),
            TaskSpec("classification", 10, 3),
        ),
        [
            "tok_emb.weight",
            "pos_emb.weight",
            "emb_ln.weight",
            "emb_ln.bias",
            *(f"blocks.{i}.{n}" for i in (0, 1) for n in BLOCK),
            "ln_f.weight",
            "ln_f.bias",
            "head.weight",
            "head.bias",
        ],
    ),
    "digits": (
        lambda: build_digits(
            DigitsConfig(width=8, blocks=2, heads=2, block_size=4), TaskSpec("next-item", 10)
        ),
        [
            "embed.weight",
            *(
                f"blocks.{i}.{n}"
                for i in (0, 1)
                for n in (
                    "attn.qkv.weight",
                    "attn.qkv.bias",
                    "attn.proj.weight",
                    "attn.proj.bias",
                    "norm1.weight",
                    "norm1.bias",
                    "ff.0.weight",
                    "ff.0.bias",
                    "ff.2.weight",
                    "ff.2.bias",
                    "norm2.weight",
                    "norm2.bias",
                )
            ),
            "head.weight",
            "head.bias",
        ],
    ),
}


@pytest.mark.parametrize("name", MODELS)
def test_parameter_names_are_those_saved_runs_hold(name):
    build, expected = MODELS[name]
    assert list(build().state_dict()) == expected  # a renamed parameter breaks every old run


@pytest.mark.parametrize("name", MODELS)
def test_every_built_in_attends_through_the_shared_precision_rule(name, monkeypatch):
    calls = []

    def counting(q, k, v, **options):
        calls.append(q.shape)
        return F.scaled_dot_product_attention(q, k, v, **options)

    monkeypatch.setattr(layers, "attention", counting)
    monkeypatch.setattr(layers, "attention_at_rows", counting)  # queries at a few rows
    model = MODELS[name][0]()
    ids = torch.randint(3, 10, (2, 4))
    model(ids, torch.ones_like(ids))
    assert len(calls) == 2  # one per block


def test_attention_runs_in_fp32_under_cpu_bf16_autocast():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 5, 4) for _ in range(3))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = layers.attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), is_causal=True)
    assert out.dtype == torch.float32
    expected = F.scaled_dot_product_attention(
        q.bfloat16().float(), k.bfloat16().float(), v.bfloat16().float(), is_causal=True
    )
    assert torch.equal(out, expected)


def test_attention_at_a_few_rows_runs_in_fp32_matrix_products_on_the_cpu():
    """No SDPA there: given fewer queries than keys, its CPU kernel's gradient sums depend
    on the thread count."""
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 1, 1, 4), torch.randn(3, 1, 6, 4), torch.randn(3, 1, 6, 4)
    keep = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]]).bool()
    keep = keep[:, None, None, :]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = layers.attention_at_rows(q.bfloat16(), k.bfloat16(), v.bfloat16(), keep)
    assert out.dtype == torch.float32
    expected = F.scaled_dot_product_attention(
        q.bfloat16().float(), k.bfloat16().float(), v.bfloat16().float(), attn_mask=keep
    )
    assert torch.allclose(out, expected, atol=1e-6)
    assert torch.allclose(out[2], v[2, :, :1].bfloat16().float())  # one real key: its value


def test_gpt2_init_scales_the_residual_projections_by_depth():
    torch.manual_seed(0)
    model = build_decoder(
        DecoderConfig(n_layer=8, n_head=2, n_embd=64, block_size=4),
        TaskSpec("language-modeling", 50),
    )
    params = dict(model.named_parameters())
    residual = torch.cat(
        [params[f"blocks.{i}.{n}.proj.weight"].flatten() for i in range(8) for n in ("attn", "mlp")]
    )
    assert residual.std().item() == pytest.approx(0.02 / math.sqrt(16), rel=0.05)
    assert params["blocks.0.attn.qkv.weight"].std().item() == pytest.approx(0.02, rel=0.05)
    assert not params["blocks.0.attn.qkv.bias"].any() and params["ln_f.weight"].eq(1).all()


def test_key_mask_and_last_real_read_right_padded_batches():
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    h = torch.arange(2 * 4 * 1, dtype=torch.float32).view(2, 4, 1)
    assert layers.last_real(h, mask).flatten().tolist() == [2.0, 4.0]
    assert layers.last_real(h, None).flatten().tolist() == [3.0, 7.0]
    assert layers.key_mask(mask).shape == (2, 1, 1, 4) and layers.key_mask(None) is None


def test_attention_over_a_context_gives_those_rows_of_the_whole_attention():
    """Queries at a few rows, keys and values from every row: the same outputs as those rows
    of self-attention over the whole sequence, padding masked either way."""
    torch.manual_seed(0)
    attn = layers.SelfAttention(8, 2)
    x = torch.randn(2, 5, 8)
    keep = layers.key_mask(torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]))
    whole = attn(x, keep)
    rows = attn(x[:, [1, 2]], keep, context=x)
    assert rows.shape == (2, 2, 8)
    assert torch.allclose(rows, whole[:, [1, 2]], atol=1e-6)
    assert not torch.allclose(attn(x[:, [1, 2]], keep[..., :2]), whole[:, [1, 2]], atol=1e-3)
    with pytest.raises(ValueError, match="causal"):
        layers.SelfAttention(8, 2, causal=True)(x[:, :1], None, context=x)


def _gradients_at(threads: int, model, ids, mask, targets) -> dict:
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(ids, mask)
        F.cross_entropy(logits.float(), targets).backward()
    finally:
        torch.set_num_threads(previous)
    return {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.slow
@skip_where_amx_splits_bf16_sums
def test_the_digits_network_has_the_same_gradients_on_one_thread_and_on_two():
    """What makes a `zoo sweep --jobs 2` cell (one thread) equal the same cell in a
    two-thread `--jobs 1`. The batch has digits-char's shape (256 rows padded to 15 tokens),
    large enough for the fused LayerNorm kernel to sum its weight gradients per thread: with
    nn.LayerNorm they differ. (Not every shape is safe: at 256 x 16 tokens the bf16 matmul
    of a weight gradient splits its sum by thread count too.)"""
    torch.manual_seed(0)
    model = build_digits(
        DigitsConfig(width=64, blocks=2, heads=1, block_size=32, positions="end"),
        TaskSpec("next-item", 14),
    )
    assert isinstance(model.blocks[0].norm1, layers.ThreadInvariantLayerNorm)
    ids = torch.randint(1, 14, (256, 15))
    mask = (torch.arange(15)[None] < torch.randint(5, 16, (256, 1))).long()
    targets = torch.randint(0, 14, (256,))
    one, two = (_gradients_at(n, model, ids * mask, mask, targets) for n in (1, 2))
    assert all(torch.equal(one[name], two[name]) for name in one)

    for block in model.blocks:  # the control: torch's own LayerNorm, same weights
        for name in ("norm1", "norm2"):
            fused = torch.nn.LayerNorm(64)
            fused.load_state_dict(getattr(block, name).state_dict())
            setattr(block, name, fused)
    one, two = (_gradients_at(n, model, ids * mask, mask, targets) for n in (1, 2))
    assert not all(torch.equal(one[name], two[name]) for name in one)


def test_thread_invariant_layer_norm_computes_layer_norm():
    torch.manual_seed(0)
    norm = layers.ThreadInvariantLayerNorm(8)
    torch.nn.init.normal_(norm.weight)
    torch.nn.init.normal_(norm.bias)
    x = torch.randn(3, 5, 8)
    expected = F.layer_norm(x, (8,), norm.weight, norm.bias, norm.eps)
    assert torch.allclose(norm(x), expected, atol=1e-6)
    assert list(norm.state_dict()) == ["weight", "bias"]
    bare = layers.ThreadInvariantLayerNorm(8, bias=False)
    assert torch.allclose(bare(x), F.layer_norm(x, (8,), bare.weight, None, bare.eps), atol=1e-6)


def test_a_block_built_the_api_1_1_way_warns_and_is_the_block_its_settings_build():
    from zoo.errors import ZooDeprecationWarning

    settings = layers.BlockSettings(8, 2, 16, bias=False, causal=True, norm="rms", kv_heads=1)
    torch.manual_seed(0)
    block = layers.PreLNBlock(settings)
    torch.manual_seed(0)
    with pytest.warns(ZooDeprecationWarning, match="BlockSettings"):
        old = layers.PreLNBlock(8, 2, 16, bias=False, causal=True, norm="rms", kv_heads=1)
    assert block.attn.causal and isinstance(block.ln1, layers.RMSNorm)
    x = torch.randn(2, 5, 8)  # the same seed drew the same weights: the same block
    assert torch.equal(old(x), block(x))
