"""Whole-step CUDA graphs (the `cuda_graph` training setting): the same training as eager
steps, a non-finite step still stopped before the weights, and no effect on the CPU."""

import json

import numpy as np
import pytest
from conftest import TINY_DECODER, run_cli

torch = pytest.importorskip("torch")
needs_cuda = pytest.mark.cuda


def tiny_decoder(device: str, cuda_graph: bool, dropout: float = 0.0):
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.model import build

    from zoo.core.loading import task_loss
    from zoo.core.names import get_task
    from zoo.train.model import TaskSpec
    from zoo.train.torch_model import TorchModel

    torch.manual_seed(0)
    cfg = DecoderConfig(n_layer=2, n_head=2, n_embd=32, block_size=16, dropout=dropout)
    model = TorchModel(
        build(cfg, TaskSpec("language-modeling", 50)),
        device,
        loss=task_loss(get_task("language-modeling")),
    )
    model.configure_engine(precision="fp32", cuda_graph=cuda_graph)
    model.configure_optimizer(1e-2, 0.1)
    return model


def batches(count: int, rows: int = 4):
    rng = np.random.default_rng(0)
    for _ in range(count):
        ids = rng.integers(0, 50, size=(rows, 17))
        yield ids[:, :-1], ids[:, 1:]


@needs_cuda
def test_graphed_steps_train_as_eager_steps_do():
    eager, graphed = tiny_decoder("cuda", False), tiny_decoder("cuda", True)
    assert graphed._graphed is not None and eager._graphed is None
    # Ten steps with a changing learning rate: three warm-up steps, a capture, replays; and
    # one batch of another shape, which runs eagerly between replays.
    schedule = [(x, y) for x, y in batches(10)]
    schedule[7] = next(batches(1, rows=2))
    for step, (x, y) in enumerate(schedule):
        lr = 1e-2 * (step + 1) / 10
        assert graphed.train_step(x, y, lr) == pytest.approx(eager.train_step(x, y, lr), rel=1e-5)
    assert graphed._graphed.graph is not None  # the steps really replayed a graph
    for name, weight in eager.state_dict().items():
        np.testing.assert_allclose(graphed.state_dict()[name], weight, rtol=1e-4, atol=1e-6)
    meta = graphed.optimizer_state()[1]  # the graph's tensor learning rate saves as a number
    assert json.loads(json.dumps(meta))["param_groups"][0]["lr"] == pytest.approx(1e-2)


@needs_cuda
def test_a_non_finite_graphed_step_leaves_the_weights_alone():
    from zoo.train.model import NonFiniteError

    model = tiny_decoder("cuda", True)
    for x, y in batches(5):  # warm-up and capture
        model.train_step(x, y, 1e-2)
    before = model.state_dict()
    with torch.no_grad():  # the graph reads this weight in place: the next loss is inf
        model.module.lm_head.weight[0, 0] = float("inf")
    with pytest.raises(NonFiniteError):
        model.train_step(x, y, 1e-2)
    after = model.state_dict()
    for name, weight in before.items():
        if "lm_head" not in name and "tok_emb" not in name:
            np.testing.assert_array_equal(after[name], weight)


@needs_cuda
def test_a_graphed_run_with_dropout_finishes_through_the_cli(tiny_text):
    result = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        8,
        "--device",
        "cuda",
        "--set",
        "cuda_graph=true",
        "--set",
        "dropout=0.1",
        "--json",
        *TINY_DECODER,
    )
    assert result.code == 0, result
    assert json.loads(result.out)["status"] == "finished"


@pytest.mark.slow
def test_cuda_graph_changes_nothing_on_the_cpu(tiny_text):
    runs = []
    for setting in ("false", "true"):
        result = run_cli(
            "run",
            "decoder-char",
            tiny_text,
            "--steps",
            6,
            "--json",
            "--set",
            f"cuda_graph={setting}",
            *TINY_DECODER,
        )
        assert result.code == 0, result
        runs.append(json.loads(result.out)["metrics"]["val_loss"])
    assert runs[0] == runs[1]
    assert tiny_decoder("cpu", True)._graphed is None
