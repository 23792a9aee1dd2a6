"""The NumPy reference against the torch decoder: weights both ways through safetensors,
logits (float32 and float64), gradients against autograd, AdamW steps, finite differences;
then the numpy architecture through the pipeline, and `zoo verify`."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import TINY_DECODER, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zoo.plugins.decoder import DecoderConfig
from zoo.plugins.decoder.model import build as build_torch
from zoo.plugins.numpy import NumpyConfig
from zoo.plugins.numpy.model import NumpyDecoder, cross_entropy, parameter_shapes

from zoo.errors import ZooError
from zoo.io import load_safetensors
from zoo.train.job import RunFolder
from zoo.train.model import IGNORE_INDEX, TaskSpec
from zoo.train.torch_model import TorchModel

TASKS = ("language-modeling", "classification", "next-item")
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Case:
    kwargs: dict  # DecoderConfig fields
    spec: TaskSpec
    inputs: np.ndarray  # [B, T]
    mask: np.ndarray  # [B, T], right-padded
    targets: np.ndarray  # [B, T] for language modeling, else [B]
    seed: int

    def numpy_model(self, dtype: str, **extra) -> NumpyDecoder:
        return NumpyDecoder(NumpyConfig(**{**self.kwargs, **extra}, dtype=dtype), self.spec, seed=0)

    def torch_model(self, dtype=torch.float32) -> torch.nn.Module:
        return build_torch(DecoderConfig(**self.kwargs), self.spec).to(dtype).eval()


@st.composite
def cases(draw, tasks=TASKS):
    n_head = draw(st.integers(1, 3))
    # LayerNorm over 1-3 channels is ill-conditioned (1 channel maps to 0; 2 or 3 channels
    # often have a variance near eps), and float32 rounding there swamps any comparison.
    head_dim = draw(st.integers(-(-4 // n_head), 4))
    block = draw(st.integers(1, 8))
    kwargs = dict(
        n_layer=draw(st.integers(1, 2)),
        n_head=n_head,
        n_embd=n_head * head_dim,
        block_size=block,
        bias=draw(st.booleans()),
        tie_weights=draw(st.booleans()),
        gelu=draw(st.sampled_from(["tanh", "exact"])),
    )
    task = draw(st.sampled_from(tasks))
    vocab = draw(st.integers(3, 12))
    classes = draw(st.integers(2, 4)) if task == "classification" else None
    batch, length = draw(st.integers(1, 3)), draw(st.integers(1, block))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    lengths = (
        rng.integers(1, length + 1, size=batch)
        if task != "language-modeling"
        else np.full(batch, length)
    )
    mask = (np.arange(length)[None, :] < lengths[:, None]).astype(np.int64)
    inputs = np.where(mask == 1, rng.integers(0, vocab, (batch, length)), 0)
    if task == "language-modeling":
        targets = rng.integers(0, vocab, (batch, length))
        targets[rng.random((batch, length)) < 0.2] = IGNORE_INDEX
        targets[0, 0] = rng.integers(0, vocab)  # at least one target counts
    else:
        targets = rng.integers(0, classes or vocab, batch)
    return Case(kwargs, TaskSpec(task, vocab, classes), inputs, mask, targets, seed)


def random_weights(case: Case) -> dict[str, np.ndarray]:
    """Weights far from the initialisation (biases, LayerNorm gains), so every op matters."""
    rng = np.random.default_rng(case.seed + 1)
    state = {}
    for name, shape in parameter_shapes(NumpyConfig(**case.kwargs), case.spec).items():
        if len(shape) == 1 and "ln" in name and name.endswith("weight"):
            state[name] = 1.0 + rng.normal(0.0, 0.3, shape)
        else:
            state[name] = rng.normal(0.0, 0.5 if len(shape) == 2 else 0.3, shape)
    return state


def through_file(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Save as a run folder's model.safetensors and read it back."""
    with tempfile.TemporaryDirectory() as folder:
        RunFolder(Path(folder)).save_weights(state)
        return load_safetensors(Path(folder) / "model.safetensors")


def paired(case: Case, dtype: str):
    """A NumPy model and a torch decoder holding the same random weights."""
    ours = case.numpy_model(dtype)
    ours.load_state_dict({k: v.astype(dtype) for k, v in random_weights(case).items()})
    theirs = TorchModel(case.torch_model(getattr(torch, dtype)), loss=cross_entropy)
    theirs.load_state_dict(through_file(ours.state_dict()))
    return ours, theirs.module


def torch_logits(module, case: Case) -> torch.Tensor:
    return module(torch.from_numpy(case.inputs), torch.from_numpy(case.mask))


# -- weights ------------------------------------------------------------------------------
@FAST
@given(cases())
def test_weights_move_both_ways_with_the_same_names_and_shapes(case):
    torch_side = TorchModel(case.torch_model(), loss=cross_entropy)
    from_torch = through_file(torch_side.state_dict())
    shapes = parameter_shapes(NumpyConfig(**case.kwargs), case.spec)
    assert {k: v.shape for k, v in from_torch.items()} == shapes
    ours = case.numpy_model("float32")
    ours.load_state_dict(from_torch)
    assert all(np.array_equal(ours.state_dict()[k], v) for k, v in from_torch.items())
    assert ours.num_parameters() == torch_side.num_parameters()

    ours.load_state_dict({k: v.astype(np.float32) for k, v in random_weights(case).items()})
    torch_side.load_state_dict(through_file(ours.state_dict()))
    back = torch_side.state_dict()
    assert back.keys() == shapes.keys()
    assert all(np.array_equal(back[k], v) for k, v in ours.state_dict().items())


def test_weights_that_do_not_fit_are_a_clear_error():
    spec = TaskSpec("language-modeling", 7)
    model = NumpyDecoder(NumpyConfig(n_layer=1, n_head=1, n_embd=4, block_size=4), spec, seed=0)
    state = model.state_dict()
    state["pos_emb.weight"] = np.zeros((5, 4), dtype=np.float32)
    with pytest.raises(ZooError, match="pos_emb.weight"):
        model.load_state_dict(state)
    with pytest.raises(ZooError, match="missing"):
        model.load_state_dict({k: v for k, v in state.items() if k != "ln_f.weight"})


# -- forward ------------------------------------------------------------------------------
@pytest.mark.slow
@FAST
@given(cases())
def test_logits_agree_in_float32(case):
    ours, theirs = paired(case, "float32")
    expected = torch_logits(theirs, case).detach().numpy()
    got = ours.logits(case.inputs, case.mask)
    assert got.dtype == np.float32 and got.shape == expected.shape
    # float32 error grows with the logits' size: 1e-5 relative to the largest (at least 1)
    assert np.abs(got - expected).max() <= 1e-5 * max(1.0, float(np.abs(expected).max()))


@pytest.mark.slow
@FAST
@given(cases())
def test_logits_agree_in_float64(case):
    ours, theirs = paired(case, "float64")
    expected = torch_logits(theirs, case).detach().numpy()
    got = ours.logits(case.inputs, case.mask)
    assert got.dtype == np.float64
    assert np.abs(got - expected).max() <= 1e-10


@pytest.mark.slow
@FAST
@given(cases())
def test_summed_loss_matches_torch(case):
    ours, theirs = paired(case, "float64")
    logits = torch_logits(theirs, case)
    targets = torch.from_numpy(case.targets)
    expected = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    ).item()
    total, count = ours.loss_sum(case.inputs, case.targets, case.mask)
    assert count == int((case.targets != IGNORE_INDEX).sum())
    assert total == pytest.approx(expected, rel=1e-10, abs=1e-12)


# -- backward -----------------------------------------------------------------------------
@pytest.mark.slow
@FAST
@given(cases())
def test_gradients_agree_with_autograd_in_float64(case):
    ours, theirs = paired(case, "float64")
    logits = torch_logits(theirs, case)
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        torch.from_numpy(case.targets).reshape(-1),
        ignore_index=IGNORE_INDEX,
    )
    loss.backward()
    our_loss, grads = ours.loss_and_grads(case.inputs, case.targets, case.mask)
    assert our_loss == pytest.approx(loss.item(), rel=1e-12)
    named = dict(theirs.named_parameters())
    assert named.keys() == grads.keys()
    for name, param in named.items():
        if param.grad is None:  # an untied lm_head the classification head never uses
            assert not grads[name].any(), name
            continue
        expected = param.grad.numpy()
        scale = np.abs(expected).max()
        assert np.abs(grads[name] - expected).max() <= 1e-8 * max(scale, 1e-30), name


def test_adamw_steps_match_torch_with_clipping_and_decay():
    rng = np.random.default_rng(3)
    kwargs = dict(n_layer=2, n_head=2, n_embd=8, block_size=6, tie_weights=True)
    spec = TaskSpec("language-modeling", 9)
    ours = NumpyDecoder(NumpyConfig(**kwargs, dtype="float64"), spec, seed=1)
    theirs = TorchModel(build_torch(DecoderConfig(**kwargs), spec).double(), loss=cross_entropy)
    theirs.load_state_dict(ours.state_dict())
    ours.configure_optimizer(lr=1e-2, weight_decay=0.1)
    theirs.configure_optimizer(lr=1e-2, weight_decay=0.1)  # the pipeline's decay/no-decay groups
    for lr in (1e-2, 5e-3, 2e-3):
        x, y = rng.integers(0, 9, (3, 6)), rng.integers(0, 9, (3, 6))
        # TorchModel.train_step computes its loss in float32; this is that step in float64.
        for group in theirs.optimizer.param_groups:
            group["lr"] = lr
        logits = theirs.module(torch.from_numpy(x))
        loss = F.cross_entropy(logits.reshape(-1, 9), torch.from_numpy(y).reshape(-1))
        theirs.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(theirs.module.parameters(), 0.05)
        assert norm > 0.05  # clipping is in play
        theirs.optimizer.step()
        assert ours.train_step(x, y, lr, grad_clip=0.05) == pytest.approx(loss.item(), rel=1e-12)
    for name, value in theirs.state_dict().items():
        assert np.abs(ours.params[name] - value).max() <= 1e-12, name


def finite_difference_check(model: NumpyDecoder, inputs, targets, mask=None, eps=1e-6):
    """Every element of every parameter: central differences against the backward pass."""

    def loss():  # dropout masks are the same on every call: a fresh generator, same seed
        logits, _ = model.forward(inputs, mask, train=True, rng=np.random.default_rng(5))
        return cross_entropy(logits, targets)[0]

    _, grads = model.loss_and_grads(inputs, targets, mask, train=True, rng=np.random.default_rng(5))
    checked = 0
    for name, param in model.params.items():
        numeric = np.zeros_like(param)
        for index in np.ndindex(param.shape):
            saved = param[index]
            param[index] = saved + eps
            up = loss()
            param[index] = saved - eps
            down = loss()
            param[index] = saved
            numeric[index] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-8, err_msg=name)
        checked += param.size
    return checked


@pytest.mark.parametrize(
    "task, extra",
    [
        ("language-modeling", dict(n_layer=2, tie_weights=False, dropout=0.2)),
        ("language-modeling", dict(n_layer=1, tie_weights=True, bias=False)),
        ("language-modeling", dict(n_layer=1, gelu="exact")),
        ("classification", dict(n_layer=1, tie_weights=True, dropout=0.1)),
        ("next-item", dict(n_layer=1, tie_weights=False)),
    ],
)
def test_finite_differences_cover_every_parameter(task, extra):
    rng = np.random.default_rng(11)
    spec = TaskSpec(task, 5, num_classes=3 if task == "classification" else None)
    cfg = NumpyConfig(**{"n_head": 2, "n_embd": 4, "block_size": 4, **extra}, dtype="float64")
    model = NumpyDecoder(cfg, spec, seed=2)
    model.load_state_dict({k: v + rng.normal(0, 0.3, v.shape) for k, v in model.params.items()})
    inputs = rng.integers(0, 5, (2, 4))
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]])
    if task == "language-modeling":
        targets = rng.integers(0, 5, (2, 4))
        targets[1, 2] = IGNORE_INDEX
    else:
        targets = rng.integers(0, 3 if task == "classification" else 5, 2)
    checked = finite_difference_check(model, inputs, targets, mask)
    assert checked == model.num_parameters()


def test_the_numpy_modules_import_no_torch():
    code = "import sys, zoo.plugins.numpy.model, zoo.plugins.numpy; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- through the pipeline ----------------------------------------------------------------
def tiny_run(model, dataset, *extra, seed=0):
    result = run_cli(
        "run", model, dataset, "--steps", 10, "--seed", seed, "--json", *TINY_DECODER, *extra
    )
    assert result.code == 0, result
    return json.loads(result.out)


def test_numpy_char_trains_through_the_pipeline_and_reloads_into_torch(tiny_text):
    from zoo.operations.reload import load_trained
    from zoo.records.store import home

    summary = tiny_run("numpy-char", tiny_text)
    assert summary["status"] == "finished" and summary["architecture"] == "numpy"
    for key in ("val_loss", "val_bpc", "test_loss", "tokens_per_s"):
        assert math.isfinite(summary["metrics"][key]), key
    trained = load_trained(summary["run_id"])
    assert isinstance(trained.model, NumpyDecoder)
    # the run folder's weights drive a torch decoder to the same logits
    state = load_safetensors(home() / summary["run_id"] / "model.safetensors")
    config = DecoderConfig(n_layer=1, n_head=2, n_embd=16, block_size=16)
    torch_side = TorchModel(build_torch(config, trained.model.spec), loss=cross_entropy)
    torch_side.load_state_dict(state)
    inputs = np.arange(32).reshape(2, 16) % trained.model.spec.vocab_size
    assert np.abs(torch_side.logits(inputs) - trained.model.logits(inputs)).max() <= 1e-5
    generated = run_cli("generate", summary["run_id"], "--prompt", "line", "--tokens", 10)
    assert generated.code == 0 and generated.out.startswith("line"), generated


@pytest.mark.slow
def test_numpy_and_torch_start_from_the_same_loss_and_both_learn(tiny_text):
    from zoo.records.store import home
    from zoo.train.job import RunFolder

    curves, vocab = {}, None
    for model in ("numpy-char", "decoder-char"):
        summary = tiny_run(model, tiny_text, "--set", "lr=1e-2", seed=5)
        vocab = summary["metrics"]["vocab_size"]
        curves[model] = [
            r["train_loss"]
            for r in RunFolder(home() / summary["run_id"]).curve()
            if "train_loss" in r
        ]
    for model, curve in curves.items():
        # near-uniform predictions at initialisation: about ln(vocab) on the first batch
        assert curve[0] == pytest.approx(math.log(vocab), abs=0.1), model
        assert curve[-1] < curve[0] - 0.3, (model, curve)
    again = tiny_run("numpy-char", tiny_text, "--set", "lr=1e-2", seed=5)
    assert again["metrics"]["train_loss"] == curves["numpy-char"][-1]  # seeded: repeatable


def test_initialisation_follows_the_torch_scheme():
    kwargs = dict(n_layer=2, n_head=2, n_embd=64, block_size=32, tie_weights=False)
    spec = TaskSpec("classification", 50, num_classes=3)
    ours = NumpyDecoder(NumpyConfig(**kwargs), spec, seed=0).state_dict()
    torch.manual_seed(0)
    theirs = TorchModel(build_torch(DecoderConfig(**kwargs), spec), loss=cross_entropy).state_dict()
    assert ours.keys() == theirs.keys()
    for name, value in theirs.items():
        if value.ndim == 1:  # biases zero, LayerNorm gains one, in both
            assert np.array_equal(ours[name], value), name
        else:
            assert np.std(ours[name]) == pytest.approx(np.std(value), rel=0.1), name
            assert abs(np.mean(ours[name])) < 3 * np.std(value) / math.sqrt(value.size), name


# -- zoo verify ---------------------------------------------------------------------------
@pytest.mark.slow
def test_verify_passes_on_a_decoder_run_and_fails_past_the_tolerance(tiny_text):
    run_id = tiny_run("decoder-char", tiny_text)["run_id"]
    result = run_cli("verify", run_id, "--json")
    assert result.code == 0, result
    figures = json.loads(result.out)
    assert figures["passed"] and 0 < figures["max_logit_diff"] <= 1e-5
    assert figures["loss_model"] == pytest.approx(figures["loss_reference"], abs=1e-5)
    text = run_cli("verify", run_id)
    assert text.code == 0 and "max |logit difference|" in text.out and "verified" in text.out

    strict = run_cli("verify", run_id, "--tolerance", "1e-15")
    assert strict.code == 1
    assert len(strict.err.strip().splitlines()) == 1 and "FAILED" in strict.err


@pytest.mark.slow
def test_verify_catches_a_model_that_computes_something_else(tiny_text, monkeypatch):
    run_id = tiny_run("decoder-char", tiny_text, "--set", "lr=1e-2")["run_id"]
    import zoo.plugins.numpy.model as reference

    monkeypatch.setattr(reference, "LN_EPS", 1e-2)  # a subtly different LayerNorm
    result = run_cli("verify", run_id)
    assert result.code == 1 and "FAILED" in result.err, result


def test_verify_rejects_what_it_cannot_check(tiny_text):
    assert run_cli("verify", "no-such-run").code == 2


def test_numpy_erf_is_exact_in_float64_and_within_float32_resolution_in_float32():
    from zoo.plugins.numpy.model import erf

    x = np.linspace(-6.0, 6.0, 20001)
    expected = np.array([math.erf(v) for v in x])
    assert np.array_equal(erf(x), expected)
    assert erf(x.astype(np.float32)).dtype == np.float32
    assert np.abs(erf(x.astype(np.float32)) - expected).max() < 1e-6
