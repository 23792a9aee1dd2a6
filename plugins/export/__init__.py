"""The `onnx` export format: any run whose torch network traces, as an ONNX graph and its
tokenizer.json, for ``zoo export`` (the default where no format names the architecture).

Formats are ``register_exporters`` registrations (zoo.hookspecs), as a third-party plugin
adds its own. ``reading.py`` holds what every built-in format shares: how a task's model reads
a text (frame, cut, padding, built into the exported tokenizer.json) and what zoo predicts.
Nothing here imports torch; the format (``onnx.py``) loads on first use.
"""

from __future__ import annotations

from zoo.plugin import hookimpl


@hookimpl
def register_exporters(register):
    register(
        "onnx",
        "zoo.plugins.export.onnx:OnnxExporter",
        architectures=("*",),
        description="model.onnx (onnxruntime) and tokenizer.json, for any network that traces",
    )
