"""The ``onnx`` export format: any architecture whose torch network traces, as ``model.onnx``
that onnxruntime runs, beside the ``tokenizer.json`` that encodes a text as zoo does.

The graph takes ``input_ids`` and ``attention_mask`` (int64 [batch, length], a dynamic
batch and length up to ``block_size``; an input the network never reads is left out of the
graph) and gives ``logits`` (the network's output, as zoo's model computes it) and
``probabilities`` (what zoo predicts from them: the softmax, with special tokens given no
probability where the task never predicts them).

The network is traced by torch's TorchScript exporter first (fast, and the only one that
converts packed LSTM sequences into ONNX's own LSTM with sequence lengths), and by the
``torch.export`` exporter (onnxscript) when the first cannot convert an operator (an
``EmbeddingBag`` with a padding index) or its graph does not compute what the network does
on a batch of another shape. Opset 18: the newest both exporters write and every
onnxruntime since 1.14 runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import warnings
from pathlib import Path

import numpy as np

from zoo.plugin import ZooError

OPSET = 18
MODEL_FILE = "model.onnx"
INPUTS = ("input_ids", "attention_mask")
OUTPUTS = ("logits", "probabilities")
SELF_CHECK = 1e-4  # largest logit difference between a traced graph and the network

USAGE = """\
import json

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

folder = "FOLDER"
tokenizer = Tokenizer.from_file(f"{folder}/tokenizer.json")  # frames, cuts and pads as zoo
session = onnxruntime.InferenceSession(f"{folder}/model.onnx")
texts = TEXTS
batch = tokenizer.encode_batch(texts)
ids = np.array([e.ids for e in batch], dtype=np.int64)
mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
feed = {"input_ids": ids, "attention_mask": mask}
feed = {i.name: feed[i.name] for i in session.get_inputs()}  # the inputs the graph reads
probabilities = session.run(["probabilities"], feed)[0]
"""


class OnnxExporter:
    """The ``onnx`` exporter (``zoo.hookspecs.register_exporters``)."""

    @staticmethod
    def unsupported(trained) -> str | None:
        from zoo.plugins.export.reading import READINGS

        if _network(trained) is None:
            return (
                f"{trained.config['architecture']} runs have no torch network to trace "
                "(--format transformers writes the numpy architecture)"
            )
        if trained.task == "seq2seq":
            return "the onnx format writes one graph, not an encoder and a decoder that search"
        if trained.task not in READINGS:
            return f"the onnx format has no reading for {trained.task} runs"
        if getattr(trained.tokenizer, "backend", None) is None:
            return f"the {trained.config['tokenizer']} tokenizer cannot travel as tokenizer.json"
        return None

    @staticmethod
    def write(trained, folder: Path) -> dict:
        from zoo.plugins.export.reading import exported_tokenizer, reading_of

        exported_tokenizer(trained).save(str(folder / "tokenizer.json"))
        exporter = trace(trained, folder / MODEL_FILE)
        settings = {
            "format": "onnx",
            "task": trained.task,
            "inputs": list(INPUTS),
            "outputs": list(OUTPUTS),
            "max_length": trained.context_length,
            "never_predicted": _never_tokens(trained),
        }
        names = _class_names(trained)
        if names:
            settings["id2label"] = {str(i): name for i, name in enumerate(names)}
            settings["label2id"] = {name: i for i, name in enumerate(names)}
        (folder / "config.json").write_text(json.dumps(settings, indent=2) + "\n")
        return {
            "library_name": "onnx",
            "pipeline_tag": reading_of(trained).pipeline_tag,
            "summary": f"an ONNX graph (opset {OPSET}, traced by torch's {exporter} "
            "exporter) that onnxruntime runs, and the tokenizer as tokenizer.json",
            "usage": _usage(trained),
        }

    @staticmethod
    def check(trained, folder: Path, texts: list[str]) -> dict:
        import onnxruntime
        from zoo.plugins.export.reading import compare, encoded, zoo_probabilities

        session = onnxruntime.InferenceSession(
            str(folder / MODEL_FILE), providers=["CPUExecutionProvider"]
        )
        feed = encoded(folder / "tokenizer.json", texts)
        theirs = session.run(["probabilities"], _fed(session, feed))[0]
        ours, mask = zoo_probabilities(trained, texts)
        return compare(trained, ours, mask, theirs, feed["attention_mask"])


def _network(trained):
    """The run's torch module, or None (a model that is not torch)."""
    return trained.network


def _never_tokens(trained) -> list[str]:
    from zoo.plugins.export.reading import never_ids

    return [trained.tokenizer.backend.id_to_token(i) for i in never_ids(trained)]


def _class_names(trained) -> list[str]:
    if trained.task != "classification":
        return []
    from zoo.plugin.io import load_json

    names = (trained.row.get("metrics") or {}).get("class_names")
    path = trained.folder.file("classes.json")
    if not names and path.is_file():
        names = load_json(path)
    return [str(n) for n in names or []]


def _fed(session, feed: dict) -> dict:
    wanted = {i.name for i in session.get_inputs()}
    return {k: v for k, v in feed.items() if k in wanted}


def _usage(trained) -> str:
    text = USAGE.replace("TEXTS", '["the film was a delight", "a dull, lifeless film"]')
    if trained.task == "classification":
        text += (
            'labels = json.load(open(f"{folder}/config.json"))["id2label"]\n'
            "for text, p in zip(texts, probabilities):\n"
            "    print(text, labels[str(p.argmax())], p.max())\n"
        )
    elif trained.task == "next-item":
        text += (
            "for text, p in zip(texts, probabilities):\n"
            "    print(text, tokenizer.id_to_token(int(p.argmax())), p.max())\n"
        )
    else:  # one distribution per position
        text += (
            "last = mask.sum(axis=1) - 1  # each text's last real token\n"
            "for text, row, at in zip(texts, probabilities, last):\n"
            "    print(text, '->', tokenizer.id_to_token(int(row[at].argmax())))\n"
        )
    return text


class Outputs:
    """The network with its outputs as the graph gives them (built lazily: torch)."""

    @staticmethod
    def wrap(trained, network):
        import torch
        from zoo.plugins.export.reading import never_ids

        vocab = trained.config["spec"]["vocab_size"]
        never = torch.zeros(vocab, dtype=torch.bool)
        never[never_ids(trained)] = True
        masks = bool(never.any())

        class Exported(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.network = network
                self.register_buffer("never", never, persistent=False)

            def forward(self, input_ids, attention_mask):
                logits = self.network(input_ids, attention_mask).float()
                shown = logits.masked_fill(self.never, float("-inf")) if masks else logits
                return logits, torch.softmax(shown, dim=-1)

        return Exported().eval()


def trace(trained, path: Path) -> str:
    """Write the network's graph to ``path``; returns the exporter that traced it."""
    import torch

    from zoo.errors import require_extra

    require_extra(("onnx", "onnxscript", "onnxruntime"), "export", "an ONNX export")
    network = _network(trained)
    wrapped = Outputs.wrap(trained, network)
    vocab = trained.config["spec"]["vocab_size"]
    longest = trained.context_length or 64
    length = max(2, min(longest, 16))
    rng = np.random.default_rng(0)
    ids = torch.from_numpy(rng.integers(3, vocab, size=(3, length)))
    mask = torch.ones_like(ids)
    mask[1, length // 2 :] = 0  # a padded row, so nothing traces as if every row were full
    ids[1, length // 2 :] = trained.tokenizer.pad_id
    problems = []
    for exporter in ("TorchScript", "torch.export"):
        try:
            with torch.no_grad(), _quiet():
                _export(wrapped, (ids, mask), path, exporter, longest)
            _self_check(trained, path, longest)
            return exporter
        except Exception as exc:  # noqa: BLE001 - either exporter may fail on any op
            problems.append(f"{exporter}: {_first_line(exc)}")
            path.unlink(missing_ok=True)
    raise ZooError(
        f"the {trained.config['architecture']} network does not trace to ONNX ("
        + "; ".join(problems)
        + "); a plugin exporter (zoo.hookspecs.register_exporters) can write it"
    )


def _export(wrapped, example, path: Path, exporter: str, longest: int) -> None:
    import torch

    if exporter == "TorchScript":
        axes = {"input_ids": {0: "batch", 1: "length"}, "attention_mask": {0: "batch", 1: "length"}}
        torch.onnx.export(
            wrapped,
            example,
            str(path),
            dynamo=False,
            input_names=list(INPUTS),
            output_names=list(OUTPUTS),
            dynamic_axes={**axes, "logits": {0: "batch"}, "probabilities": {0: "batch"}},
            opset_version=OPSET,
        )
        return
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=longest)
    torch.onnx.export(
        wrapped,
        example,
        str(path),
        dynamo=True,
        input_names=list(INPUTS),
        output_names=list(OUTPUTS),
        dynamic_shapes=({0: batch, 1: length}, {0: batch, 1: length}),
        opset_version=OPSET,
        external_data=False,
        verbose=False,
    )


def _self_check(trained, path: Path, longest: int) -> None:
    """The graph computes what the network does at other shapes than the traced one: one
    input of one token and of a few, a batch of inputs with padded rows, and a batch as long
    as the context (a trace that fixed a shape or a branch fails here)."""
    import onnxruntime

    vocab = trained.config["spec"]["vocab_size"]
    rng = np.random.default_rng(1)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for rows, length in ((1, 1), (1, min(longest, 3)), (3, min(longest, 11)), (2, longest)):
        ids = rng.integers(3, vocab, size=(rows, length))
        mask = np.ones_like(ids)
        if rows > 1:  # a padded row, shorter than the others
            mask[0, max(1, length // 3) :] = 0
            ids[0, max(1, length // 3) :] = trained.tokenizer.pad_id
        feed = {"input_ids": ids, "attention_mask": mask}
        logits = session.run(["logits"], _fed(session, feed))[0]
        difference = float(np.max(np.abs(logits - trained.model.logits(ids, mask))))
        if not difference <= SELF_CHECK:
            raise ValueError(
                f"the traced graph's logits differ by {difference:.3g} on {rows} input(s) "
                f"of {length} token(s)"
            )


@contextlib.contextmanager
def _quiet():
    """The exporters' warnings and progress lines (Python's and their C++ code's, written
    straight to the file descriptors) say nothing a user can act on."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as devnull, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        logger.setLevel(level)


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"
