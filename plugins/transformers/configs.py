"""Config dataclasses of the transformers-backed architectures, made from transformers' own
config classes, so that every field transformers has can be set with ``--set``.

Each config has zoo's common fields (``n_layer``, ``n_head``, ``n_embd``, ``block_size``,
``dropout``), mapped onto the transformers config by the architecture's ``Layout``, the
``pretrained`` checkpoint to start from, and one field per further scalar field of the
transformers config class (``activation_function``, ``rms_norm_eps``, ``intermediate_size``,
...). Those default to ``None``: transformers' own default for a new model, the checkpoint's
value for a pretrained one. Fields zoo decides itself (the vocabulary size, special-token
ids, the number of labels) and non-scalar ones (``rope_parameters``) are not offered.

This module imports transformers' configuration classes (and so torch); the plugin's
``__init__`` names it as a "module:attr" string, so listing the zoo never imports it.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import transformers

from zoo.plugin.config import sized

transformers.logging.set_verbosity_error()  # no advice about Hub usage on every config
# Fields every transformers config has (from PreTrainedConfig) or that zoo sets from the
# task and the tokenizer: never offered to --set.
ZOO_DECIDES = {
    "vocab_size",
    "pad_token_id",
    "bos_token_id",
    "eos_token_id",
    "use_cache",
    "add_cross_attention",
    "is_decoder",
    "tie_encoder_decoder",
}
BASE_FIELDS = {f.name for f in dataclasses.fields(transformers.PreTrainedConfig)}
NEW_MODEL_SHAPE = {"n_layer": 4, "n_head": 4, "n_embd": 128}  # the decoder's defaults


@dataclass(frozen=True)
class Layout:
    """How zoo's common fields map onto one transformers config class."""

    config_class: type
    shape: dict[str, str]  # zoo field -> transformers field (n_layer, n_head, n_embd, block_size)
    dropouts: tuple[str, ...]  # transformers fields that zoo's `dropout` sets
    # transformers fields whose unset value zoo derives from its own config rather than
    # taking transformers' default (an MLP width of 11008 would swamp a 128-wide model)
    derived: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    mlp_width: str = "intermediate_size"  # the transformers field of the MLP's hidden width


LAYOUTS = {
    "gpt2": Layout(
        transformers.GPT2Config,
        {"n_layer": "n_layer", "n_head": "n_head", "n_embd": "n_embd", "block_size": "n_positions"},
        ("resid_pdrop", "embd_pdrop", "attn_pdrop"),
        mlp_width="n_inner",
    ),
    "llama": Layout(
        transformers.LlamaConfig,
        {
            "n_layer": "num_hidden_layers",
            "n_head": "num_attention_heads",
            "n_embd": "hidden_size",
            "block_size": "max_position_embeddings",
        },
        ("attention_dropout",),
        {"intermediate_size": lambda cfg: 4 * cfg.n_embd},
    ),
    "bert": Layout(
        transformers.BertConfig,
        {
            "n_layer": "num_hidden_layers",
            "n_head": "num_attention_heads",
            "n_embd": "hidden_size",
            "block_size": "max_position_embeddings",
        },
        ("hidden_dropout_prob", "attention_probs_dropout_prob"),
        {"intermediate_size": lambda cfg: 4 * cfg.n_embd},
    ),
}


@dataclass
class TransformersConfig:
    """zoo's side of a transformers-backed architecture; subclasses add transformers' fields."""

    # None: 4, 4 and 128 for a new model (the decoder's defaults); the checkpoint's when
    # pretrained (a value that differs from the checkpoint's is an error)
    n_layer: int | None = sized(None, role="depth")
    n_head: int | None = sized(None, role="heads")
    n_embd: int | None = sized(None, role="width")
    block_size: int = sized(
        128, role="context"
    )  # longest input in tokens; a new model's position table has this size
    dropout: float = 0.0  # every dropout of the transformers config
    # a save_pretrained folder or Hub id to start from (weights, and with the `pretrained`
    # tokenizer its tokenizer); "" builds a new model. The `pretrained` tokenizer reads the
    # same key, so one --set pretrained=... sets both.
    pretrained: str = field(default="", metadata={"shared": True})

    architecture: typing.ClassVar[str] = ""

    def __post_init__(self):
        for name in ("n_layer", "n_head", "n_embd", "block_size"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        self.transformers_config(vocab_size=8)  # a setting transformers rejects fails now

    @property
    def layout(self) -> Layout:
        return LAYOUTS[self.architecture]

    def extra_fields(self) -> dict[str, Any]:
        """The transformers fields set in this config (None: not set)."""
        common = {f.name for f in dataclasses.fields(TransformersConfig)}
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in common and getattr(self, f.name) is not None
        }

    def transformers_config(self, vocab_size: int, **task_fields):
        """The transformers config this describes: the checkpoint's (pretrained) or a new
        one, with zoo's fields applied. Raises ValueError for what cannot work."""
        layout = self.layout
        if self.pretrained:
            config = checkpoint_config(self.pretrained, self.architecture)
            for name, target in layout.shape.items():
                value, theirs = getattr(self, name), getattr(config, target)
                if name == "block_size":
                    if value > theirs:
                        raise ValueError(
                            f"block_size {value} exceeds the checkpoint's {target} ({theirs})"
                        )
                elif value is not None and value != theirs:
                    raise ValueError(
                        f"{name}={value} differs from the checkpoint's {target} "
                        f"({theirs}); leave it unset to take the checkpoint's"
                    )
            values = self.extra_fields()
        else:
            values = {
                target: getattr(self, name)
                if getattr(self, name) is not None
                else NEW_MODEL_SHAPE[name]
                for name, target in layout.shape.items()
            }
            for name, derive in layout.derived.items():
                if getattr(self, name) is None:
                    values[name] = derive(_shaped(self, values, layout))
            values.update(self.extra_fields())
            # zoo's tokenizers have no begin/end tokens (GPT-2's default ids are 50256)
            values.update(vocab_size=vocab_size, bos_token_id=None, eos_token_id=None)
            _check_heads(values[layout.shape["n_embd"]], values[layout.shape["n_head"]])
            try:
                config = layout.config_class(**values)
            except Exception as exc:  # transformers' strict validation of a field
                raise ValueError(_first_line(exc)) from None
            values = {}
        values.update({name: self.dropout for name in layout.dropouts}, **task_fields)
        for name, value in values.items():
            setattr(config, name, value)
        _check_heads(config.hidden_size, config.num_attention_heads)
        return config


def _check_heads(width: int, heads: int) -> None:
    """In zoo's names, before transformers' own check says it in its names (or not at all)."""
    if width % heads:
        raise ValueError(f"n_embd ({width}) must be divisible by n_head ({heads})")


def _shaped(config: TransformersConfig, values: dict, layout: Layout):
    """The common fields as they will be (defaults filled in), for derived defaults."""
    resolved = {name: values[target] for name, target in layout.shape.items()}
    return types.SimpleNamespace(**resolved)


def _first_line(exc: Exception) -> str:
    """An exception's message in one line. transformers' validation errors open with a
    header ("Class validation error for validator 'validate_architecture':") and give the
    reason on the next line: skip the header."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):
        lines = lines[1:]
    return (lines[0] if lines else type(exc).__name__)[:300]


PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
HUB = ("huggingface.co", 443)


def looks_like_a_path(source: str) -> bool:
    """A folder, not a Hub id (ORG/NAME or NAME): it starts like a path or has more parts."""
    return (
        source.startswith(("/", "./", "../", "~", ".\\"))
        or source.count("/") > 1
        or os.sep != "/"
        and os.sep in source
    )


def check_source(source: str) -> None:
    """A missing local folder, or a Hub id with no network and no cached copy, in one line
    (rather than "Repo id must be in the form ..." or half a minute of retries)."""
    if Path(source).expanduser().is_dir():
        return
    if looks_like_a_path(source):
        raise ValueError(
            f"cannot read the checkpoint {source!r}: no such folder (pretrained "
            "takes a save_pretrained folder or a Hugging Face Hub id, ORG/NAME)"
        )
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or _cached(source):
        return
    try:
        socket.create_connection(HUB, timeout=3).close()
    except OSError:
        raise ValueError(
            f"cannot fetch {source!r}: the Hugging Face Hub ({HUB[0]}) cannot be "
            "reached and no copy is cached here; pass a local folder "
            "(save_pretrained) instead"
        ) from None


def _cached(source: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(source, "config.json"), str)
    except Exception:  # an id the hub library itself refuses: from_pretrained says why
        return False


def checkpoint_config(source: str, architecture: str):
    """The transformers config of a checkpoint folder or Hub id, checked to be of the
    architecture's model type. Raises ValueError naming the source."""
    check_source(source)
    try:
        config = transformers.AutoConfig.from_pretrained(source)
    except Exception as exc:  # a missing folder, no network for a Hub id, a bad config.json
        raise ValueError(f"cannot read the checkpoint {source!r}: {_first_line(exc)}") from None
    folder = Path(source).expanduser()
    if folder.is_dir() and not any(folder.glob("*.safetensors")):
        pickled = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
        if pickled:
            raise ValueError(
                f"checkpoint {source!r} holds only pickled weights ({pickled[0]}); "
                "zoo loads safetensors only (pickle runs code): save it with "
                "save_pretrained(..., safe_serialization=True)"
            )
    expected = LAYOUTS[architecture].config_class.model_type
    if config.model_type != expected:
        raise ValueError(
            f"checkpoint {source!r} is a {config.model_type} model, not {expected}; "
            f"use the architecture of that name"
        )
    return config


def _field_type(annotation) -> type | None:
    """int, float, bool or str for a scalar transformers field (None allowed), else None."""
    args = (
        set(typing.get_args(annotation))
        if typing.get_origin(annotation) in (typing.Union, types.UnionType)
        else {annotation}
    )
    args.discard(type(None))
    if args <= {int, float} and args:
        return float if float in args else int
    if len(args) == 1 and next(iter(args)) in (bool, str):
        return next(iter(args))
    return None


def make_config(architecture: str) -> type:
    """The zoo config dataclass of one architecture: the common fields, then one optional
    field per scalar field of its transformers config class."""
    layout = LAYOUTS[architecture]
    taken = (
        BASE_FIELDS
        | ZOO_DECIDES
        | set(layout.shape.values())
        | set(layout.dropouts)
        | {f.name for f in dataclasses.fields(TransformersConfig)}
    )
    extra = []
    for f in dataclasses.fields(layout.config_class):
        kind = _field_type(f.type)
        if f.name in taken or f.name.startswith("_") or kind is None:
            continue
        if f.name == layout.mlp_width:  # bounded, and read by zoo's memory estimate
            extra.append((f.name, kind | None, sized(None, role="mlp_width")))
        else:
            extra.append((f.name, kind | None, field(default=None)))
    name = f"{architecture.title()}Config"
    cls = dataclasses.make_dataclass(name, extra, bases=(TransformersConfig,))
    cls.architecture = architecture
    cls.__module__ = __name__
    cls.__doc__ = (
        f"zoo config of the {architecture!r} architecture (transformers "
        f"{layout.config_class.__name__}); unset fields take transformers' defaults"
    )
    return cls


Gpt2Config = make_config("gpt2")
LlamaConfig = make_config("llama")
BertConfig = make_config("bert")
