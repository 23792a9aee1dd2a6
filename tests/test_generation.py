"""Generation with a key/value cache: cached logits equal the recomputed ones (torch decoder
and NumPy reference, one row and left-padded batches, across a slid context), the pipeline
samples the same text either way, falls back for models without a cache, and streams."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import TINY_DECODER, run_cli
from zoo.pipelines.language_modeling import Contexts, Sampling, generate, generate_batch
from zoo.plugins.decoder import DecoderConfig
from zoo.plugins.decoder.model import build as build_torch
from zoo.plugins.numpy import NumpyConfig
from zoo.plugins.numpy.model import NumpyDecoder

from zoo.train.model import TaskSpec
from zoo.train.torch_model import TorchModel

SPEC = TaskSpec("language-modeling", vocab_size=23)
SHAPE = dict(n_layer=2, n_head=2, n_embd=16, block_size=12, gelu="exact")
TOL = 1e-5


def torch_model(**extra) -> TorchModel:
    torch.manual_seed(0)
    return TorchModel(build_torch(DecoderConfig(**SHAPE, **extra), SPEC), loss=F.cross_entropy)


def numpy_model(**extra) -> NumpyDecoder:
    return NumpyDecoder(NumpyConfig(**SHAPE, **extra), SPEC, seed=0)


MODELS = {"torch": torch_model, "numpy": numpy_model}


def uncached(model, ids) -> np.ndarray:
    return model.logits(np.asarray([ids], dtype=np.int64))[0, -1]


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("bias", [True, False])
def test_cached_logits_equal_recomputed_ones_at_every_position(kind, bias):
    model = MODELS[kind](bias=bias)
    ids = list(np.random.default_rng(1).integers(0, SPEC.vocab_size, SHAPE["block_size"]))
    logits, cache = model.start_decoding(np.asarray([ids[:3]]))
    np.testing.assert_allclose(logits[0], uncached(model, ids[:3]), atol=TOL, rtol=0)
    for t in range(3, len(ids)):
        logits, cache = model.decode_step(np.asarray([ids[t]]), cache)
        np.testing.assert_allclose(logits[0], uncached(model, ids[: t + 1]), atol=TOL, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize("kind", MODELS)
def test_left_padded_batch_rows_equal_each_row_alone(kind):
    model = MODELS[kind]()
    rng = np.random.default_rng(2)
    rows = [list(rng.integers(3, SPEC.vocab_size, n)) for n in (5, 1, 3)]
    contexts = Contexts([list(r) for r in rows], SHAPE["block_size"])
    inputs, pads = contexts.padded()
    assert list(pads) == [0, 4, 2]
    logits, cache = model.start_decoding(inputs, pads)
    for _step in range(4):
        for b, row in enumerate(rows):
            np.testing.assert_allclose(logits[b], uncached(model, row), atol=TOL, rtol=0)
        nxt = rng.integers(3, SPEC.vocab_size, len(rows))
        for row, token in zip(rows, nxt):
            row.append(int(token))
        logits, cache = model.decode_step(nxt, cache)


@pytest.mark.slow
@pytest.mark.parametrize("kind", MODELS)
def test_cached_and_uncached_generation_sample_the_same_text_past_block_size(kind, monkeypatch):
    """40 tokens through a 12-token context slide it several times; each slide recomputes the
    cache at the new positions, so the text matches the recomputing path token for token."""
    from zoo.plugins.char import CharTokenizer

    tokenizer = CharTokenizer.train(["abcdefghij klmnopqrst\n"])
    spec = TaskSpec("language-modeling", tokenizer.vocab_size)
    cfg = (DecoderConfig if kind == "torch" else NumpyConfig)(**SHAPE)
    torch.manual_seed(0)
    model = (
        TorchModel(build_torch(cfg, spec), loss=F.cross_entropy)
        if kind == "torch"
        else NumpyDecoder(cfg, spec, seed=0)
    )
    steps = []
    original = type(model).decode_step

    def counted(self, next_ids, cache):
        steps.append(cache.length)
        return original(self, next_ids, cache)

    monkeypatch.setattr(type(model), "decode_step", counted)
    prompts = ["abc", "hello world", ""]
    options = dict(temperature=1.0, seed=3)
    cached = texts(
        generate_batch(model, tokenizer, prompts, 40, 12, Sampling(**options)), len(prompts)
    )
    assert steps and max(steps) < 12  # the cache was used and never overflowed
    recomputed = texts(
        generate_batch(model, tokenizer, prompts, 40, 12, Sampling(cache=False, **options)),
        len(prompts),
    )
    assert cached == recomputed
    assert all(len(t) == 40 for t in cached)


def texts(pieces, rows: int) -> list[str]:
    out = [""] * rows
    for b, piece in pieces:
        out[b] += piece
    return out


def test_a_model_without_incremental_decoding_falls_back_to_recomputing():
    from zoo.plugins.char import CharTokenizer

    tokenizer = CharTokenizer.train(["abcdef\n"])
    inner = NumpyDecoder(
        NumpyConfig(**SHAPE), TaskSpec("language-modeling", tokenizer.vocab_size), seed=0
    )

    class LogitsOnly:  # the minimum a language model must have
        def logits(self, inputs, mask=None):
            return inner.logits(inputs, mask)

    fallback = "".join(generate(LogitsOnly(), tokenizer, "ab", 30, 12, Sampling(seed=5)))
    cached = "".join(generate(inner, tokenizer, "ab", 30, 12, Sampling(seed=5)))
    assert fallback == cached and len(fallback) == 30


def test_generation_streams_one_piece_per_token():
    from zoo.plugins.char import CharTokenizer

    tokenizer = CharTokenizer.train(["abcdef\n"])
    model = NumpyDecoder(
        NumpyConfig(**SHAPE), TaskSpec("language-modeling", tokenizer.vocab_size), seed=0
    )
    pieces = generate(model, tokenizer, "ab", 25, 12, Sampling(seed=1))
    first = next(pieces)  # a generator: text arrives before the rest is sampled
    assert len(first) == 1 and len(list(pieces)) == 24


@pytest.mark.slow
def test_zoo_generate_with_several_prompts_and_without_the_cache(tiny_text):
    summary = run_cli("run", "decoder-char", tiny_text, "--steps", 2, "--json", *TINY_DECODER)
    assert summary.code == 0, summary
    import json

    run_id = json.loads(summary.out)["run_id"]
    args = ("--tokens", 40, "--seed", 4)  # past the 16-token context
    cached = run_cli("generate", run_id, "--prompt", "line", *args)
    plain = run_cli("generate", run_id, "--prompt", "line", "--no-cache", *args)
    assert cached.code == 0 and cached.out == plain.out and cached.out.startswith("line")
    both = run_cli("generate", run_id, "--prompt", "line", "--prompt", "the quick", *args)
    assert both.code == 0, both
    first, second = both.out.split("\n\n-----\n\n")
    assert first.startswith("line") and second.startswith("the quick")
    assert len(first) >= len("line") + 30 and len(second) >= len("the quick") + 30
