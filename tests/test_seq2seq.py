"""Sequence to sequence: the encoder-decoder against torch.nn.Transformer, decoding (cached
against uncached, beam against exhaustive search), the prefix LM's loss, the metrics
against sacreBLEU's, label smoothing, and a tiny run end to end."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from tests.conftest import run_zoo

torch = pytest.importorskip("torch")

VOCAB = 7  # <pad> <unk> <cls> and four more tokens
PAD, UNK, BOS = 0, 1, 2


def tiny_encdec(seed: int = 0, layers: int = 2):
    from zoo.plugins.encdec import EncDecConfig
    from zoo.plugins.encdec.model import build

    from zoo.plugin import TaskSpec

    torch.manual_seed(seed)
    cfg = EncDecConfig(
        encoder_layers=layers,
        decoder_layers=layers,
        n_head=2,
        n_embd=16,
        block_size=12,
        dropout=0.0,
        tie_weights=False,
    )
    return build(cfg, TaskSpec("seq2seq", VOCAB)).eval()


def tiny_prefix_lm(seed: int = 0):
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.model import build

    from zoo.plugin import TaskSpec

    torch.manual_seed(seed)
    cfg = DecoderConfig(n_layer=2, n_head=2, n_embd=16, block_size=16, tie_weights=False)
    return build(cfg, TaskSpec("language-modeling", VOCAB)).eval()


def tiny_mamba_prefix_lm(seed: int = 0):
    from zoo.plugins.mamba import MambaConfig
    from zoo.plugins.mamba.model import build

    from zoo.plugin import TaskSpec

    torch.manual_seed(seed)
    cfg = MambaConfig(n_layer=2, n_embd=16, d_state=4, block_size=16, scan_chunk=4)
    module = build(cfg, TaskSpec("language-modeling", VOCAB)).eval()
    with torch.no_grad():  # large steps: a padding position read would show in the logits
        for weight in module.parameters():
            weight.normal_(0, 0.5)
    return module


def as_model(module):
    from zoo.plugin.losses import cross_entropy
    from zoo.train.torch_model import as_model

    return as_model(module, "cpu", loss=cross_entropy)


def tiny_transformers(model_type: str, seed: int = 2):  # 2: every type writes past one token
    """A transformers encoder-decoder of the type at zoo's smallest shape, behind the adapter."""
    from zoo.plugins.transformers.configs import make_config
    from zoo.plugins.transformers.model import build

    from zoo.plugin import TaskSpec

    torch.manual_seed(seed)
    cfg = make_config(f"hf-{model_type}")(n_layer=2, n_head=2, n_embd=16, block_size=12)
    module = build(cfg, TaskSpec("seq2seq", VOCAB, pad_id=PAD)).eval()
    with torch.no_grad():  # weights far from transformers' small init: outputs of some length
        for weight in module.parameters():
            weight.normal_(0, 0.5)
    return module


def layout(prefix_lm: bool, block: int):
    from zoo.pipelines.seq2seq import Layout

    return Layout(prefix_lm, block, BOS, PAD)


SOURCES = [np.array([3, 4, 5, 6]), np.array([5, 3]), np.array([6, 6, 4])]


# -- the network ---------------------------------------------------------------------------
def reference_weights(ref) -> dict:
    """torch.nn.Transformer's weights under encdec's names."""
    names = {}

    def copy(dst, module):
        names[f"{dst}.weight"] = module.weight
        if module.bias is not None:
            names[f"{dst}.bias"] = module.bias

    def attention(dst, mha):
        names[f"{dst}.qkv.weight"], names[f"{dst}.qkv.bias"] = mha.in_proj_weight, mha.in_proj_bias
        copy(f"{dst}.proj", mha.out_proj)

    for i, layer in enumerate(ref.encoder.layers):
        attention(f"encoder.{i}.attn", layer.self_attn)
        copy(f"encoder.{i}.ln1", layer.norm1)
        copy(f"encoder.{i}.ln2", layer.norm2)
        copy(f"encoder.{i}.mlp.fc", layer.linear1)
        copy(f"encoder.{i}.mlp.proj", layer.linear2)
    for i, layer in enumerate(ref.decoder.layers):
        attention(f"decoder.{i}.attn", layer.self_attn)
        attention(f"decoder.{i}.cross", layer.multihead_attn)
        for mine, theirs in (("ln1", layer.norm1), ("ln_cross", layer.norm2), ("ln2", layer.norm3)):
            copy(f"decoder.{i}.{mine}", theirs)
        copy(f"decoder.{i}.mlp.fc", layer.linear1)
        copy(f"decoder.{i}.mlp.proj", layer.linear2)
    copy("enc_ln", ref.encoder.norm)
    copy("dec_ln", ref.decoder.norm)
    return {k: v.detach().clone() for k, v in names.items()}


def test_the_encoder_decoder_computes_what_torch_transformer_computes(one_thread):
    """The same weights in torch.nn.Transformer (pre-LN, GELU): logits within 1e-5 in fp32,
    padded sources and targets included."""
    import torch.nn as nn

    model = tiny_encdec()
    torch.manual_seed(1)
    ref = nn.Transformer(
        16, 2, 2, 2, 64, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    ).eval()
    loaded = model.load_state_dict(reference_weights(ref), strict=False)
    assert set(loaded.missing_keys) == {
        "tok_emb.weight",
        "enc_pos.weight",
        "dec_pos.weight",
        "lm_head.weight",
    }
    src = torch.tensor([[3, 4, 5, 6], [5, 6, 4, 0]])
    src_mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    tgt = torch.tensor([[2, 5, 6], [2, 4, 0]])
    tgt_mask = torch.tensor([[2, 2, 2], [2, 2, 0]])
    with torch.no_grad():
        ours = model(torch.cat([src, tgt], 1), torch.cat([src_mask, tgt_mask], 1))
        hidden = ref(
            model.tok_emb(src) + model.enc_pos(torch.arange(4)),
            model.tok_emb(tgt) + model.dec_pos(torch.arange(3)),
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(3),
            src_key_padding_mask=src_mask == 0,
            memory_key_padding_mask=src_mask == 0,
            tgt_is_causal=True,
        )
        theirs = model.lm_head(hidden)
    real = tgt_mask.bool()
    torch.testing.assert_close(ours[real], theirs[real], rtol=0, atol=1e-5)


def test_the_packed_batch_splits_at_the_first_target_column():
    from zoo.plugin.layers import split_source_target

    ids = torch.tensor([[3, 4, 2, 5], [3, 0, 2, 0]])
    mask = torch.tensor([[1, 1, 2, 2], [1, 0, 2, 0]])
    source, source_mask, target, target_mask = split_source_target(ids, mask)
    assert source.tolist() == [[3, 4], [3, 0]] and source_mask.tolist() == [[1, 1], [1, 0]]
    assert target.tolist() == [[2, 5], [2, 0]] and target_mask.tolist() == [[1, 1], [1, 0]]


# -- decoding ------------------------------------------------------------------------------
def decode(model, prefix_lm, sources, beam, cache, penalty=1.0, max_new=5):
    from zoo.pipelines.seq2seq_decoding import Search, Steps, beam_search

    lay = layout(prefix_lm, 16 if prefix_lm else 12)
    expanded = [s for s in sources for _ in range(beam)]

    def logits_after(rows, prefixes):
        return lay.logits_after(model, [expanded[r] for r in rows], prefixes)

    steps = Steps(model, lay.prompts(expanded), logits_after, cache)
    return beam_search(steps, len(sources), Search(beam, penalty, max_new, BOS, [PAD, UNK]))


# transformers' types that decode from their cache (plugins/transformers/model.py)
CACHED_TYPES = ["bart", "marian", "mbart", "pegasus", "t5"]


@pytest.mark.parametrize(
    "kind",
    ["encoder-decoder", "prefix-lm", "mamba-prefix-lm", *(f"hf-{t}" for t in CACHED_TYPES)],
)
def test_cached_decoding_equals_decoding_from_scratch(kind, one_thread):
    """Left-padded prompts and a growing cache give the logits and the outputs of
    recomputing every prefix: greedy, and a beam of 3 (whose cache is reordered). zoo's
    encoder-decoder, decoder and Mamba (whose cache is its state), and each transformers
    type that decodes from its cache."""
    prefix_lm = kind.endswith("prefix-lm")
    if kind == "mamba-prefix-lm":
        module = tiny_mamba_prefix_lm()
    elif kind.startswith("hf-"):
        from zoo.plugins.transformers.model import CACHED_SEQ2SEQ

        assert set(CACHED_TYPES) == CACHED_SEQ2SEQ  # every type that claims it is tested
        module = tiny_transformers(kind.removeprefix("hf-"))
    else:
        module = tiny_prefix_lm() if prefix_lm else tiny_encdec()
    model = as_model(module)
    assert model.decodes_incrementally
    lay = layout(prefix_lm, 16 if prefix_lm else 12)
    cached, _ = model.start_decoding(*lay.prompts(SOURCES))
    scratch = lay.logits_after(model, SOURCES, np.zeros((3, 0), dtype=np.int64))
    np.testing.assert_allclose(cached, scratch, rtol=1e-4, atol=1e-5)
    # a reordered cache is the cache of the rows it keeps
    step = np.array([4, 5, 6])
    _, cache = model.start_decoding(*lay.prompts(SOURCES))
    reordered, _ = model.decode_step(step, model.reorder_cache(cache, np.array([2, 0, 0])))
    _, fresh = model.start_decoding(*lay.prompts([SOURCES[2], SOURCES[0], SOURCES[0]]))
    np.testing.assert_allclose(reordered, model.decode_step(step, fresh)[0], rtol=1e-4, atol=1e-5)
    for beam in (1, 3):
        with_cache = decode(model, prefix_lm, SOURCES, beam, cache=True)
        assert with_cache == decode(model, prefix_lm, SOURCES, beam, cache=False)
        assert any(len(ids) > 1 for ids in with_cache)  # more than one step was taken


def exhaustive(model, prefix_lm, source, max_new, penalty) -> list[int]:
    """The best of every output: every sequence of the non-special tokens up to max_new
    long followed by the end token (or max_new long without it), by summed log-probability
    over length ** penalty."""
    from zoo.pipelines.common import log_softmax

    lay = layout(prefix_lm, 16 if prefix_lm else 12)
    tokens = range(3, VOCAB)
    best, best_score = None, -np.inf
    for length in range(max_new + 1):
        for ids in itertools.product(tokens, repeat=length):
            ends = length < max_new
            scored = list(ids) + ([BOS] if ends else [])
            logp = 0.0
            for t in range(len(scored)):
                prefix = np.array([scored[:t]], dtype=np.int64).reshape(1, t)
                logp += log_softmax(lay.logits_after(model, [source], prefix)[0].astype(float))[
                    scored[t]
                ]
            score = logp / len(scored) ** penalty
            if score > best_score:
                best, best_score = list(ids), score
    return best


@pytest.mark.parametrize("penalty", [0.0, 1.0])
def test_a_wide_enough_beam_finds_what_exhaustive_search_finds(penalty, one_thread):
    """With a beam as wide as every hypothesis there is (4 tokens, 3 steps: 4^2 live ones
    at most before the last step), nothing is dropped, so beam search returns the
    exhaustive search's best, under either length penalty."""
    model = as_model(tiny_encdec(seed=3))
    for source in SOURCES[:2]:
        found = decode(model, False, [source], beam=64, cache=True, penalty=penalty, max_new=3)
        assert found[0] == exhaustive(model, False, source, 3, penalty)


def test_greedy_takes_the_likeliest_token_at_each_step(one_thread):
    model = as_model(tiny_encdec(seed=5))
    lay = layout(False, 12)
    source = SOURCES[0]
    ids: list[int] = []
    for _ in range(4):
        logits = lay.logits_after(model, [source], np.array([ids], dtype=np.int64)).copy()
        logits[0, [PAD, UNK]] = -np.inf
        token = int(logits[0].argmax())
        if token == BOS:
            break
        ids.append(token)
    assert decode(model, False, [source], beam=1, cache=True, max_new=4)[0] == ids


# -- training ------------------------------------------------------------------------------
def test_the_prefix_lm_loss_counts_the_target_only(one_thread):
    """source <cls> target: the positions that predict a source token or the separator
    are IGNORE_INDEX; the target's tokens and its end count, and nothing else."""
    from zoo.plugin import IGNORE_INDEX

    lay = layout(True, 16)
    sources, targets = [np.array([3, 4, 5]), np.array([6])], [np.array([5, 6]), np.array([4])]
    batch = lay.batch(sources, targets)
    assert batch.inputs[0].tolist() == [3, 4, 5, 2, 5, 6]
    assert batch.targets[0].tolist() == [IGNORE_INDEX] * 3 + [5, 6, 2]
    assert batch.targets[1].tolist()[:3] == [IGNORE_INDEX, 4, 2]
    model = as_model(tiny_prefix_lm())
    total, count = model.loss_sum(batch.inputs, batch.targets, batch.mask)
    assert count == (2 + 1) + (1 + 1)
    # changing the source's tokens changes the loss only through what the target reads
    logits = model.logits(batch.inputs, batch.mask).astype(np.float64)
    from zoo.pipelines.common import log_softmax

    logp = log_softmax(logits)
    counted = batch.targets != IGNORE_INDEX
    rows, cols = np.nonzero(counted)
    assert total == pytest.approx(-logp[rows, cols, batch.targets[counted]].sum(), rel=1e-5)


def test_label_smoothing_trains_on_the_smoothed_loss_and_reports_the_plain_one(one_thread):
    """A training step minimizes (1 - e) x cross entropy + e x the mean over classes of
    -log p; loss_sum (validation, test) stays the plain cross entropy."""
    from zoo.pipelines.common import log_softmax

    from zoo.plugin import IGNORE_INDEX
    from zoo.plugin.losses import cross_entropy, label_smoothed
    from zoo.train.torch_model import as_model as wrap

    lay = layout(False, 12)
    batch = lay.batch(SOURCES, [np.array([4, 5]), np.array([6]), np.array([3, 3, 3])])
    model = wrap(tiny_encdec(), "cpu", loss=cross_entropy, train_loss=label_smoothed(0.1))
    logp = log_softmax(model.logits(batch.inputs, batch.mask).astype(np.float64))
    counted = batch.targets != IGNORE_INDEX
    nll = -np.take_along_axis(logp, np.where(counted, batch.targets, 0)[..., None], -1)[..., 0]
    total, count = model.loss_sum(batch.inputs, batch.targets, batch.mask)
    assert total / count == pytest.approx(nll[counted].mean(), rel=1e-5)
    smoothed = 0.9 * nll[counted] + 0.1 * -logp[counted].mean(axis=-1)
    model.configure_optimizer(lr=1e-3, weight_decay=0.0)
    trained_on = model.train_step(batch.inputs, batch.targets, 1e-3, batch.mask)
    assert trained_on == pytest.approx(smoothed.mean(), rel=1e-5)
    assert abs(smoothed.mean() - nll[counted].mean()) > 1e-4  # the two differ here


# -- export --------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
def test_the_encoder_decoder_in_pegasus_layout_computes_and_decodes_the_same(bias, one_thread):
    """The export's layout: encdec's weights in PegasusForConditionalGeneration give the same
    logits (padded rows included) and, by transformers' generate with zoo's greedy settings,
    the same outputs as zoo's greedy search."""
    transformers = pytest.importorskip("transformers")
    from zoo.plugins.encdec.pegasus import hf_config, to_hf

    model = tiny_encdec(seed=8)
    model.cfg.bias = bias
    if not bias:  # drop the biases: the mapping fills zeros, which compute what none does
        for module in model.modules():
            if getattr(module, "bias", None) is not None:
                module.bias = None
    with torch.no_grad():
        for p in model.parameters():  # weights large enough for outputs that vary
            p.add_(torch.randn_like(p) * 0.3)
        model.lm_head.weight[BOS] = 0.0  # the end token scores 0: outputs of a few tokens
    values = hf_config(model.cfg, VOCAB, pad_id=PAD, end_id=BOS)
    hf = transformers.PegasusForConditionalGeneration(transformers.PegasusConfig(**values))
    loaded = hf.load_state_dict(to_hf(model.state_dict(), model.cfg), strict=False)
    assert not loaded.missing_keys and not loaded.unexpected_keys
    hf.eval()
    src = torch.tensor([[3, 4, 5, 6], [5, 6, 4, 0]])
    src_mask = (src != PAD).long()
    tgt = torch.tensor([[BOS, 5, 6], [BOS, 4, 3]])
    with torch.no_grad():
        ours = model(torch.cat([src, tgt], 1), torch.cat([src_mask, 2 * torch.ones_like(tgt)], 1))
        theirs = hf(input_ids=src, attention_mask=src_mask, decoder_input_ids=tgt).logits
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)

    padded = [np.array([3, 4, 5, 6]), np.array([5, 6, 4]), np.array([6, 3])]
    ids = torch.full((3, 4), PAD)
    for i, row in enumerate(padded):
        ids[i, : len(row)] = torch.from_numpy(row)
    generated = hf.generate(
        input_ids=ids,
        attention_mask=(ids != PAD).long(),
        decoder_start_token_id=BOS,
        eos_token_id=BOS,
        pad_token_id=PAD,
        suppress_tokens=[PAD, UNK],
        max_new_tokens=5,
        do_sample=False,
        num_beams=1,
    )
    outputs = [[t for t in row[1:].tolist() if t not in (BOS, PAD)] for row in generated]
    greedy = decode(as_model(model), False, padded, beam=1, cache=True, max_new=5)
    assert outputs == greedy
    assert len({tuple(o) for o in outputs}) > 1  # outputs that differ, not one repeated
    assert min(map(len, outputs)) < 5  # one ended at the end token, before max_new_tokens


# -- metrics -------------------------------------------------------------------------------
def test_bleu_and_chrf_are_sacrebleus_on_the_text():
    import sacrebleu
    from zoo.pipelines.seq2seq import text_metrics

    hypotheses = ["A man rides a bike.", "Two dogs play in the snow.", "a cat"]
    references = ["A man is riding a bicycle.", "Two dogs play in the snow.", "A cat sleeps."]
    figures = text_metrics(hypotheses, references)
    assert figures["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score)
    assert figures["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [references]).score)
    assert 0 < figures["bleu"] < 100 and figures["exact_match"] == pytest.approx(1 / 3)
    assert figures["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert f"version:{sacrebleu.__version__}" in figures["chrf_signature"]


def test_exact_match_is_the_mean_of_each_rows_match():
    from zoo.pipelines.seq2seq import exact_matches, text_metrics

    hypotheses, references = ["a b", "c", "d e"], ["a b", "c d", "d e"]
    matches = exact_matches(hypotheses, references)
    assert matches.tolist() == [1.0, 0.0, 1.0]
    assert text_metrics(hypotheses, references)["exact_match"] == pytest.approx(matches.mean())


def test_corpus_scores_of_a_resample_are_sacrebleus_of_the_resampled_sentences():
    import sacrebleu
    from zoo.pipelines.seq2seq import score_statistics, text_scores

    hypotheses = ["A man rides a bike.", "Two dogs play in the snow.", "a cat", "one two"]
    references = ["A man is riding a bicycle.", "Two dogs play in the snow.", "A cat.", "one"]
    figures, kept = text_scores(hypotheses, references)
    for drawn in ([0, 0, 2, 3], [1, 1, 1, 3], [3, 2, 1, 0]):
        hyps, refs = [hypotheses[i] for i in drawn], [references[i] for i in drawn]
        bleu = score_statistics("test_bleu", kept["bleu"][drawn].sum(axis=0)[None])[0]
        chrf = score_statistics("val_chrf", kept["chrf"][drawn].sum(axis=0)[None])[0]
        assert bleu == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
        assert chrf == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score)
    everything = kept["bleu"].sum(axis=0)[None, :]
    assert score_statistics("test_bleu", everything)[0] == pytest.approx(figures["bleu"])


def test_a_run_without_a_target_column_is_refused_before_training(tiny_text, cli):
    result = cli("run", "encdec-char", tiny_text, "--task", "seq2seq", "--set", "steps=1")
    assert result.code == 2
    assert "seq2seq" in result.err or "target" in result.err or "label" in result.err


# -- the transduction data -------------------------------------------------------------------
@pytest.mark.parametrize("order", ["least-first", "most-first"])
def test_add_writes_its_numbers_and_their_sum_in_one_digit_order(order):
    """add's pairs are sums: least significant digit first by default (the task's
    definition), most significant first on request, the numbers and the sum alike."""
    from zoo.plugins.digits.transduction import TransductionConfig, rows

    cfg = TransductionConfig(rule="add", add_order=order, train_size=50, validation_size=5)
    pairs = rows(cfg)["train"]

    def number(text: str) -> int:
        digits = text.split()
        return int("".join(digits[::-1] if order == "least-first" else digits))

    for row in pairs:
        a, b = row["source"].split(" + ")
        assert number(a) + number(b) == number(row["target"])
    # the orders differ where a sum has more than one digit: each is the other reversed
    other = "most-first" if order == "least-first" else "least-first"
    flipped = rows(TransductionConfig(rule="add", add_order=other, train_size=50))["train"]
    assert [r["target"].split()[::-1] for r in pairs] == [r["target"].split() for r in flipped]


# -- end to end ----------------------------------------------------------------------------
TINY_TRANSDUCTION = [
    "--set",
    "steps=40",
    "--set",
    "eval_interval=20",
    "--set",
    "eval_batches=1",
    "--set",
    "dataset.train_size=200",
    "--set",
    "dataset.validation_size=20",
    "--set",
    "dataset.test_size=20",
    "--set",
    "dataset.max_len=4",
]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["encdec-char", "decoder-char"])
def test_a_tiny_transduction_run_trains_predicts_and_evaluates(model, tmp_path):
    """An encoder-decoder and a decoder-only prefix LM on digits-transduction: the run
    records BLEU, chrF with sacreBLEU's signature and exact match on validation and test;
    zoo predict translates (greedy and with a beam); zoo eval scores a split again."""
    trained = run_zoo("run", model, "digits-transduction", *TINY_TRANSDUCTION, "--json")
    assert trained.returncode == 0, trained.stderr
    record = json.loads(trained.stdout)
    metrics = record["metrics"]
    for name in ("bleu", "chrf", "exact_match", "loss"):
        assert f"val_{name}" in metrics and f"test_{name}" in metrics
    assert "tok:13a" in metrics["test_bleu_signature"]
    run_id = record["run_id"]
    # each row's exact match is kept, in the split's order, for paired comparisons
    from zoo.io import load_safetensors
    from zoo.records.paths import run_folder

    kept = load_safetensors(run_folder(run_id) / "per_example.safetensors")
    for prefix in ("val", "test"):
        assert kept[f"{prefix}_exact_match"].shape == (20,)
        assert kept[f"{prefix}_exact_match"].mean() == pytest.approx(
            metrics[f"{prefix}_exact_match"]
        )
        assert f"examples:{prefix}" in kept
        assert kept[f"statistics:{prefix}_bleu"].shape[0] == 20  # one row per sentence
        # each pair's loss per target token, weighted by its target tokens
        losses, tokens = kept[f"{prefix}_loss"], kept[f"weights:{prefix}_loss"]
        assert np.average(losses, weights=tokens) == pytest.approx(metrics[f"{prefix}_loss"])
    for extra in ([], ["--beam", "3"]):
        predicted = run_zoo("predict", run_id, "1 2 3", *extra, "--json")
        assert predicted.returncode == 0, predicted.stderr
        assert isinstance(json.loads(predicted.stdout)["output"], str)
    evaluated = run_zoo("eval", run_id, "digits-transduction", "--split", "validation", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert set(json.loads(evaluated.stdout)["metrics"]) >= {"bleu", "chrf", "exact_match"}


def test_a_model_card_shows_bleu_chrf_and_the_sacrebleu_signature():
    from pathlib import Path
    from types import SimpleNamespace

    from zoo.core.names import get_task
    from zoo.operations.card import model_card

    signature = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
    trained = SimpleNamespace(
        config={
            "model": "encdec-bpe",
            "architecture": "encdec",
            "tokenizer": "bpe",
            "dataset": "multi30k",
            "configs": {},
        },
        row={
            "id": "r1",
            "status": "finished",
            "metrics": {"test_bleu": 35.5, "test_chrf": 60.1, "test_bleu_signature": signature},
        },
        declared_task=get_task("seq2seq"),
        run_id="r1",
        task="seq2seq",
        context_length=96,
        folder=SimpleNamespace(file=lambda name: Path("/nonexistent") / name),
    )
    facts = {"library_name": "onnx", "summary": "a graph", "usage": ""}
    card = model_card(trained, facts, {}, format="onnx", folder_name="exported")
    assert "| test_bleu | 35.5000 | BLEU (0-100) | higher |" in card
    assert "| test_chrf | 60.1000 |" in card
    assert f"test_bleu_signature: `{signature}`" in card


def test_label_smoothing_is_refused_for_a_model_that_computes_its_own_loss(cli):
    result = cli(
        "run", "numpy-char", "digits-transduction", "--set", "label_smoothing=0.1",
        "--set", "dataset.train_size=50", "--set", "dataset.validation_size=4",
        "--set", "dataset.test_size=4", "--set", "steps=1",
    )  # fmt: skip
    assert result.code == 2, result
    assert "computes its own loss" in result.err


# -- kill and resume -----------------------------------------------------------------------
TINY_RESUMABLE = [
    "--set", "eval_interval=4", "--set", "eval_batches=1", "--set", "n_embd=32", "--set", "n_head=4",
    "--set", "block_size=16", "--set", "batch_size=16", "--set", "label_smoothing=0.1",
    "--set", "dataset.train_size=200", "--set", "dataset.validation_size=8",
    "--set", "dataset.test_size=8", "--set", "dataset.max_len=4",
]  # fmt: skip


@pytest.mark.slow
def test_an_encoder_decoder_killed_with_sigkill_resumes_bit_identically():
    """An encoder-decoder with dropout and label smoothing, killed with SIGKILL at a random
    step and resumed: the same run as uninterrupted (weights, metrics with BLEU, the decoded
    samples, the curve). The prefix LM shares the pipeline's state (its batch generator);
    the decoder's own resume is language modeling's."""
    import os

    from test_reliability import Trial, assert_same_run, kill_points, reference_run, run_args, watch

    from tests.conftest import run_cli
    from zoo.records.store import home

    steps = 12
    args = run_args("digits-transduction", steps, model="encdec-char", tiny=TINY_RESUMABLE)
    reference = reference_run(
        "digits-transduction", steps, model="encdec-char", tiny=TINY_RESUMABLE
    )
    trial = Trial(home().parent / "trial", args, kill_points(1).randint(2, steps - 4))
    watch([trial])
    run_id = trial.check_killed()
    os.environ["ZOO_HOME"] = str(trial.home)  # the isolated fixture restores it
    resumed = run_cli("resume", run_id, "--json")
    assert resumed.code == 0, (trial.kill_at, resumed)
    done = json.loads(resumed.out)
    assert done["task"] == "seq2seq" and "test_bleu" in done["metrics"]
    assert_same_run(done, reference)
