"""Every registered architecture, on every task it has a head for, with a tokenizer it
supports: built tiny, its output holds the shape the task declares, one training step
moves the loss, and the weights saved to a run folder reload into the same outputs.

The cases come from the registry (as timm's tests come from ``list_models()``), and the
tiny configs from the sizes each config declares (``zoo.plugin.config.sized`` roles), so a
new architecture is tested without being named here."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from zoo.core.loading import get_zoo
from zoo.train.model import optional_member

# transformers types of each kind, built by the generic adapter (a state-space model, a
# grouped-query decoder, a mixture of experts, a parallel-block decoder, two encoders)
HF_SAMPLE = ("hf-mamba", "hf-qwen2", "hf-mixtral", "hf-gpt_neox", "hf-deberta-v2", "hf-modernbert")
TEXT = "the cat sat on the mat. a dog ran to the park and the cat sat still. " * 4
# The size each role gets in a tiny model; fields without one keep their defaults.
TINY = {"width": 16, "heads": 2, "depth": 1, "context": 12, "mlp_width": 32, "mlp_ratio": 2}
NEEDS_A_CHECKPOINT = {"pretrained"}  # tokenizers that read a checkpoint rather than train


def trainable_tokenizers(zoo) -> list[str]:
    return [name for name in zoo.tokenizers.names() if name not in NEEDS_A_CHECKPOINT]


def cases() -> list:
    """(architecture, task, tokenizer) for every registered architecture and task it
    declares, the tokenizers taken in turn so that each is covered too."""
    zoo = get_zoo()
    tokenizers = trainable_tokenizers(zoo)
    found = []
    for entry in zoo.architectures.entries():
        if entry.name.startswith("hf-") and entry.name not in HF_SAMPLE:
            continue  # every transformers type: benchmarks/bench_hf_matrix.py
        for task in entry.tasks:
            if task not in zoo.pipelines:
                continue
            tokenizer = tokenizers[len(found) % len(tokenizers)]
            found.append(pytest.param(entry.name, task, tokenizer, id=f"{entry.name}-{task}"))
    return found


def tiny_config(entry):
    """The architecture's config with every declared size made small."""
    from zoo.core.config import build_config
    from zoo.core.limits import declared

    cls = entry.config_class()
    values = {
        name: TINY[facts["role"]]
        for name, facts in declared(cls).items()
        if facts.get("role") in TINY
    }
    return build_config(cls, values)


def targets_for(task, spec, batch: int, length: int, rng) -> np.ndarray:
    """Targets of the shape the task's output implies: the output less its last dimension,
    each a class (or token) id below that dimension's size."""
    *dims, classes = task.output_shape
    sizes = {"B": batch, "T": length}
    shape = [sizes[d] for d in dims]
    high = getattr(spec, classes) if isinstance(classes, str) else classes
    return rng.integers(0, high, size=shape)


@pytest.mark.parametrize("architecture, task_name, tokenizer_name", cases())
def test_every_registered_architecture_builds_trains_saves_and_reloads(
    architecture, task_name, tokenizer_name, tmp_path, one_thread
):
    pytest.importorskip("torch")
    if architecture in ("gpt2", "llama", "bert") or architecture.startswith("hf-"):
        pytest.importorskip("transformers")
    from zoo.core.limits import context_length
    from zoo.core.loading import task_loss
    from zoo.core.names import get_task
    from zoo.plugin import RunFolder, TaskSpec
    from zoo.train.losses import check_output
    from zoo.train.torch_model import as_model

    zoo = get_zoo()
    entry = zoo.architectures.get(architecture)
    tokenizer_entry = zoo.tokenizers.get(tokenizer_name)
    tokenizer = tokenizer_entry.load().train([TEXT], tokenizer_entry.config_class()())
    task = get_task(task_name, zoo)
    config = tiny_config(entry)
    length = context_length(config)
    assert length == TINY["context"]
    spec = TaskSpec(task_name, tokenizer.vocab_size, num_classes=3, pad_id=tokenizer.pad_id)

    def build():
        return as_model(entry.load()(config, spec), "cpu", loss=task_loss(task))

    model = build()
    check_output(model, task, spec, length, architecture)  # the declared shape, or a ZooError

    rng = np.random.default_rng(0)
    ids = tokenizer.encode(TEXT)[: 2 * length]
    inputs = np.array(ids, dtype=np.int64).reshape(2, length)
    mask = np.ones_like(inputs)
    if task_name == "seq2seq":  # a packed batch: half source (mask 1), half target (2)
        mask[:, length // 2 :] = 2
        targets = rng.integers(0, spec.vocab_size, size=(2, length - length // 2))
    else:
        targets = targets_for(task, spec, 2, length, rng)
    if getattr(model, "fits_training_split", False):
        vocabulary = [tokenizer.decode([i]) for i in range(tokenizer.vocab_size)]
        model.fit(inputs, targets, mask, vocabulary)
    model.configure_optimizer(lr=1e-2, weight_decay=0.0)
    before = model.loss_sum(inputs, targets, mask)
    loss = model.train_step(inputs, targets, 1e-2, mask)
    assert np.isfinite(loss) and loss > 0
    after = model.loss_sum(inputs, targets, mask)
    if not getattr(model, "fits_training_split", False):  # a fit may leave nothing to train
        assert after[0] != before[0], "one training step changed nothing"
    per_row = optional_member(model, "loss_per_row")  # every torch module has it
    assert per_row is not None or architecture == "numpy"
    if per_row is not None:  # each row's share of the sum
        sums, counts = per_row(inputs, targets, mask)
        assert sums.shape == counts.shape == (2,) and int(counts.sum()) == after[1]
        assert sums.sum() == pytest.approx(after[0], rel=1e-5)

    folder = RunFolder(tmp_path / "run")
    folder.create().save_weights(model.state_dict())
    reloaded = build()
    reloaded.load_state_dict(folder.load_weights())
    np.testing.assert_allclose(
        reloaded.logits(inputs, mask), model.logits(inputs, mask), rtol=1e-5, atol=1e-6
    )


def test_the_cases_cover_every_registered_architecture_and_tokenizer():
    zoo = get_zoo()
    covered = {(c.values[0], c.values[2]) for c in cases()}
    assert {a for a, _ in covered} == {
        name for name in zoo.architectures.names() if not name.startswith("hf-")
    } | set(HF_SAMPLE)
    assert {t for _, t in covered} == set(trainable_tokenizers(zoo))
    assert {"gpt2", "llama", "bert", "decoder", "encoder"} <= {a for a, _ in covered}


def test_tiny_configs_come_from_the_declared_sizes():
    entry = get_zoo().architectures.get("encoder")
    config = tiny_config(entry)
    assert (config.n_embd, config.n_layer, config.n_head, config.block_size) == (16, 1, 2, 12)
    assert dataclasses.is_dataclass(config) and config.mlp_ratio == 2


@pytest.mark.parametrize(
    "architecture, task_name, tokenizer_name",
    [c for c in cases() if c.values[1] == "masked-language-modeling"],
)
def test_a_masked_lm_loss_reads_only_the_scored_positions_and_is_unchanged(
    architecture, task_name, tokenizer_name, one_thread
):
    """Modules that take ``positions`` get the scored positions only, and the loss is
    the one over full logits (zoo.train.model: outputs only where targets count)."""
    if architecture == "bert":
        pytest.importorskip("transformers")
    import torch

    from zoo.core.loading import task_loss
    from zoo.core.names import get_task
    from zoo.plugin import IGNORE_INDEX, TaskSpec
    from zoo.train.torch_model import as_model

    zoo = get_zoo()
    entry = zoo.architectures.get(architecture)
    tokenizer_entry = zoo.tokenizers.get(tokenizer_name)
    tokenizer = tokenizer_entry.load().train([TEXT], tokenizer_entry.config_class()())
    spec = TaskSpec(task_name, tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    torch.manual_seed(0)
    model = as_model(
        entry.load()(tiny_config(entry), spec), "cpu", loss=task_loss(get_task(task_name, zoo))
    )
    inputs = np.array(tokenizer.encode(TEXT)[:24], dtype=np.int64).reshape(2, 12)
    targets = inputs.copy()
    targets[:, ::3] = IGNORE_INDEX  # two thirds of the positions count
    seen = []
    model.module.register_forward_pre_hook(
        lambda _, args, kwargs: seen.append(kwargs.get("positions")), with_kwargs=True
    )
    assert model.module.outputs_at_positions, f"{architecture} projects every position"
    total, count = model.loss_sum(inputs, targets)
    assert count == 16 and seen[-1] is not None and int(seen[-1].sum()) == 16
    sums, counts = model.loss_per_row(inputs, targets)  # row by row, at those positions
    assert counts.tolist() == [8, 8] and sums.sum() == pytest.approx(total, rel=1e-5)
    model._at_positions = False  # the same module, every position projected
    full, _ = model.loss_sum(inputs, targets)
    assert seen[-1] is None
    assert total == pytest.approx(full, rel=1e-5)
