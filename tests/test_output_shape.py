"""A model's output is held to the shape its task declares (zoo.Task.output_shape) on a tiny
batch when it is built, before anything trains; the loss refuses shapes it cannot score."""

import pytest
from conftest import run_cli


def build_unpooled(config, spec):
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(spec.vocab_size, spec.num_classes)

        def forward(self, input_ids, attention_mask=None):
            return self.emb(input_ids)  # [B, T, C]: forgot to pool

    return Net()


@pytest.fixture
def unpooled():
    from dataclasses import dataclass

    from zoo.core.loading import PluginInfo, get_zoo
    from zoo.hookspecs import hookimpl
    from zoo.plugin.config import sized

    @dataclass
    class Config:
        block_size: int = sized(16, role="context")

    class Plugin:
        @hookimpl
        def register_architectures(self, register):
            register("unpooled", build_unpooled, config=Config, tasks=("classification",))

    zoo = get_zoo()
    assert zoo.add_plugin(Plugin(), PluginInfo("unpooled-plugin", "test"), strict=True)
    try:
        yield zoo
    finally:
        zoo.remove_plugin("unpooled-plugin")


def test_a_per_token_output_for_classification_fails_before_training(unpooled, negated_reviews):
    result = run_cli("run", "unpooled-wordpunct", negated_reviews, "--steps", 5, "--quiet")
    assert result.code == 2, result
    line = result.err.strip()
    assert len(line.splitlines()) == 1 and line.startswith("zoo: error:")
    assert "'unpooled' from plugin 'unpooled-plugin'" in line
    assert "[2, 3, 2]" in line and "[B, num_classes]" in line
    runs = run_cli("runs", "--json").out.strip()
    assert '"steps"' not in runs  # no training step was taken


def test_cross_entropy_refuses_logits_that_do_not_fit_the_targets():
    import torch

    from zoo.errors import ZooError
    from zoo.train.losses import cross_entropy

    with pytest.raises(ZooError, match=r"\[4, 3, 2\] do not fit targets of shape \[4\]"):
        cross_entropy(torch.zeros(4, 3, 2), torch.zeros(4, dtype=torch.long), "mean")
    assert cross_entropy(
        torch.zeros(4, 2), torch.zeros(4, dtype=torch.long), "mean"
    ).item() == pytest.approx(0.6931, abs=1e-4)
