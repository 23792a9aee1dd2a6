"""The native Mamba: its parallel scan equals the step-by-step recurrence, and its logits
equal transformers' MambaForCausalLM given the same weights."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_the_chunked_parallel_scan_equals_the_sequential_recurrence(one_thread):
    from zoo.plugins.mamba.model import selective_scan, sequential_scan

    torch.manual_seed(0)
    B, T, D, N = 2, 13, 3, 4  # 13 positions: chunks of 4 leave a short last one
    dA = torch.rand(B, T, D, N)  # decays in (0, 1)
    dBu, C = torch.randn(B, T, D, N), torch.randn(B, T, N)
    reference = sequential_scan(dA, dBu, C)
    for chunk in (1, 4, 5, 13, 64):
        torch.testing.assert_close(selective_scan(dA, dBu, C, chunk), reference)


def hf_mamba(cfg, vocab):
    transformers = pytest.importorskip("transformers")
    config = transformers.MambaConfig(
        vocab_size=vocab,
        hidden_size=cfg.n_embd,
        state_size=cfg.d_state,
        num_hidden_layers=cfg.n_layer,
        expand=cfg.expand,
        conv_kernel=cfg.d_conv,
        time_step_rank=cfg.rank,
        use_bias=cfg.bias,
        use_conv_bias=cfg.conv_bias,
        tie_word_embeddings=True,
        use_mambapy=False,
    )
    return transformers.MambaForCausalLM(config).eval()


def native_mamba_weights(hf_state: dict) -> dict:
    """transformers' MambaForCausalLM names -> the native model's."""
    out = {}
    for name, tensor in hf_state.items():
        name = name.replace("backbone.embeddings", "tok_emb").replace("backbone.norm_f", "norm_f")
        out[name.replace("backbone.layers", "blocks")] = tensor
    return out


def test_logits_equal_transformers_mamba_with_the_same_weights(one_thread):
    from zoo.plugins.mamba import MambaConfig
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
    missing, unexpected = native.load_state_dict(
        native_mamba_weights(hf.state_dict()), strict=False
    )
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
