"""The native Mamba: its scans equal the step-by-step recurrence (values and gradients), its
logits equal transformers' MambaForCausalLM given the same weights, and its runs export as
one. Its decoding from the state is tested with the other cached decoders (test_seq2seq)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

torch = pytest.importorskip("torch")


def test_the_chunked_parallel_scan_equals_the_sequential_recurrence(one_thread):
    from zoo.plugins.mamba.model import selective_scan, sequential_scan

    torch.manual_seed(0)
    B, T, D, N = 2, 13, 3, 4  # 13 positions: chunks of 4 leave a short last one
    dA = torch.rand(B, T, D, N)  # decays in (0, 1)
    dBu, C = torch.randn(B, T, D, N), torch.randn(B, T, N)
    reference = sequential_scan(dA, dBu, C)
    for chunk in (1, 4, 5, 13, 64):
        for got, expected in zip(selective_scan(dA, dBu, C, chunk), reference):
            torch.testing.assert_close(got, expected)


def test_the_cpu_scan_and_its_gradients_equal_the_sequential_recurrence(one_thread):
    """SelectiveScan's outputs, last state, and gradients (its own backward pass, which
    recomputes the states a chunk at a time) equal autograd's through the reference."""
    from zoo.plugins.mamba.model import SelectiveScan, sequential_scan

    torch.manual_seed(0)
    B, T, D, N = 2, 13, 3, 4
    inputs = {
        "dt": torch.rand(B, T, D, dtype=torch.float64) * 0.5,
        "A": -torch.rand(D, N, dtype=torch.float64) * 2,
        "x": torch.randn(B, T, D, dtype=torch.float64),
        "B": torch.randn(B, T, N, dtype=torch.float64),
        "C": torch.randn(B, T, N, dtype=torch.float64),
    }
    weights = torch.randn(B, T, D, dtype=torch.float64), torch.randn(B, D, N, dtype=torch.float64)

    def loss_and_grads(scan, *extra):
        leaves = {k: v.clone().requires_grad_() for k, v in inputs.items()}
        y, last = scan(*leaves.values(), *extra)
        loss = (y * weights[0]).sum() + (last * weights[1]).sum()
        return [loss, *torch.autograd.grad(loss, list(leaves.values()))]

    def reference(dt, A, x, B, C):
        dA, dBu = torch.exp(dt[..., None] * A), x[..., None] * B[:, :, None, :]
        return sequential_scan(dA, dBu, C)

    expected = loss_and_grads(reference)
    for chunk in (1, 4, 5, 13, 64):  # 13 positions: chunks of 4 leave a short last one
        got = loss_and_grads(SelectiveScan.apply, chunk)
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e)


def hf_mamba(cfg, vocab):
    """transformers' MambaForCausalLM for the mamba config (the export's config)."""
    transformers = pytest.importorskip("transformers")
    from zoo.plugins.mamba.layout import hf_config

    return transformers.MambaForCausalLM(transformers.MambaConfig(**hf_config(cfg, vocab))).eval()


def test_logits_equal_transformers_mamba_with_the_same_weights(one_thread):
    from zoo.plugins.mamba import MambaConfig
    from zoo.plugins.mamba.layout import from_hf
    from zoo.plugins.mamba.model import build

    from zoo.plugin import TaskSpec

    torch.manual_seed(0)
    cfg = MambaConfig(n_layer=2, n_embd=16, d_state=4, block_size=24, scan_chunk=8)
    vocab = 11
    hf = hf_mamba(cfg, vocab)
    native = build(cfg, TaskSpec("language-modeling", vocab)).eval()
    with torch.no_grad():  # random, not initial, values: every weight matters to the logits
        for p in hf.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    missing, unexpected = native.load_state_dict(from_hf(hf.state_dict(), cfg), strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}  # tied to tok_emb
    ids = torch.randint(0, vocab, (2, 21))
    with torch.no_grad():
        expected = hf(ids).logits
        got = native(ids)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("task", ["language-modeling", "classification"])
def test_the_onnx_graph_traced_at_one_length_computes_every_length(task, one_thread, tmp_path):
    """zoo export's ONNX trace of the network gives its logits in onnxruntime at other
    lengths and batch sizes (padded rows too): the scan does not fix the traced length."""
    onnxruntime = pytest.importorskip("onnxruntime")
    from types import SimpleNamespace

    from zoo.plugins.export.onnx import trace
    from zoo.plugins.mamba import MambaConfig
    from zoo.plugins.mamba.model import build

    from zoo.plugin import TaskSpec

    torch.manual_seed(0)
    cfg = MambaConfig(n_layer=2, n_embd=8, d_state=4, block_size=20, scan_chunk=4)
    network = build(cfg, TaskSpec(task, 13, num_classes=3)).eval()

    def logits(ids, mask):
        with torch.no_grad():
            return network(torch.as_tensor(ids), torch.as_tensor(mask)).numpy()

    run = SimpleNamespace(  # what the exporter reads of a trained run
        config={"architecture": "mamba", "spec": {"vocab_size": 13}},
        task=task,
        network=network,
        context_length=cfg.block_size,
        tokenizer=SimpleNamespace(pad_id=0, special_ids={"pad": 0}),
        model=SimpleNamespace(logits=logits),
    )
    assert trace(run, tmp_path / "model.onnx") == "TorchScript"
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"))
    wanted = {i.name for i in session.get_inputs()}
    for rows, length in ((1, 1), (2, 5), (3, 13), (2, 20)):
        ids = torch.randint(1, 13, (rows, length))
        mask = torch.ones_like(ids)
        mask[0, max(1, length // 2) :] = 0
        feed = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
        got = session.run(["logits"], {k: v for k, v in feed.items() if k in wanted})[0]
        torch.testing.assert_close(torch.from_numpy(got), torch.from_numpy(logits(ids, mask)))


TINY_MAMBA = [
    f"--set={s}"
    for s in ("n_layer=2", "n_embd=16", "d_state=4", "block_size=16", "scan_chunk=4")
    + ("batch_size=4", "eval_batches=1", "sample_tokens=0")
]


def test_a_language_model_exports_as_transformers_mamba(tiny_text, tmp_path, one_thread):
    """zoo export writes a mamba run as a MambaForCausalLM folder (its default format) that
    transformers loads alone and that computes the run's logits."""
    transformers = pytest.importorskip("transformers")
    from zoo.operations.reload import load_trained

    ran = run_cli("run", "mamba-char", tiny_text, "--steps", 2, "--json", *TINY_MAMBA)
    assert ran.code == 0, ran
    run_id = json.loads(ran.out)["run_id"]
    done = run_cli("export", run_id, tmp_path / "hf", "--json")
    assert done.code == 0, done
    assert json.loads(done.out)["format"] == "transformers"
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "hf").eval()
    assert type(hf).__name__ == "MambaForCausalLM"
    ids = np.random.default_rng(0).integers(3, hf.config.vocab_size, size=(2, 16))
    with torch.no_grad():
        theirs = hf(input_ids=torch.from_numpy(ids)).logits.numpy()
    ours = load_trained(run_id, precision="fp32").model.logits(ids)
    assert np.max(np.abs(ours - theirs)) < 1e-5


def test_a_classifier_has_no_transformers_layout():
    """transformers has no Mamba sequence classifier: the transformers format refuses a
    classification run, saying why, so zoo export writes it as ONNX instead."""
    from types import SimpleNamespace

    from zoo.plugins.transformers.export import TransformersExporter

    run = SimpleNamespace(config={"architecture": "mamba"}, task="classification")
    reason = TransformersExporter.unsupported(run)
    assert reason == "transformers' Mamba has no classification head (MambaForCausalLM only)"
