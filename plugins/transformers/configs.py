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
import functools
import operator
import os
import re
import socket
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import transformers
from zoo.plugins.transformers.types import architecture_names, model_type_of

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
# the decoder's defaults (block_size has its own, 128)
NEW_MODEL_SHAPE = {"n_layer": 4, "n_head": 4, "n_embd": 128}


# zoo's shape fields -> the transformers names that hold them, the standard one first. A
# config class names its fields its own way (GPT-2's n_embd, OPT's hidden_size, BART's
# d_model); its ``attribute_map`` maps the standard names onto its own, and these aliases
# cover the classes whose map leaves one out.
SHAPE_NAMES = {
    "n_layer": ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_encoder_layers"),
    "n_head": ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads"),
    "n_embd": ("hidden_size", "n_embd", "d_model", "dim", "embed_dim", "n_embed", "hidden_dim"),
    "block_size": (
        "max_position_embeddings",
        "n_positions",
        "max_seq_len",
        "context_length",
        "max_sequence_length",
        "seq_length",
        "n_ctx",
    ),
}
DECODER_STACK = {
    "n_layer": ("decoder_layers", "num_decoder_layers"),
    "n_head": ("decoder_attention_heads", "num_decoder_heads", "num_decoder_attention_heads"),
}
ENCODER_STACK = {
    "n_layer": ("encoder_layers", "num_encoder_layers"),
    "n_head": ("encoder_attention_heads", "num_encoder_attention_heads"),
}
MLP_NAMES = ("intermediate_size", "n_inner", "ffn_dim", "d_ff", "inner_hidden_size")
# A Mamba-2 mixer (Mamba2's own, and the hybrids' that hold one: Bamba, Falcon-H1,
# NemotronH, ...) splits its inner width (expand x n_embd) into heads; its defaults (128
# heads of 64, 8 groups) fit no small model. Its heads follow n_head, a head is that inner
# width over them, and B and C come in one group, which divides any number of heads.
SSM_EXPAND = ("expand", "mamba_expand")
SSM_HEADS = ("mamba_n_heads", "mamba_num_heads")
SSM_HEAD_WIDTH = ("mamba_head_dim",)
SSM_INNER = ("mamba_d_ssm",)
SSM_GROUPS = ("n_groups", "mamba_n_groups")
DROPOUT = re.compile(r"(dropout|pdrop|drop_prob)")  # layerdrop, drop_path are not dropout


@dataclass(frozen=True)
class Layout:
    """How zoo's common fields map onto one transformers config class, derived from the
    class by the generic rule (``layout_of``)."""

    config_class: type
    shape: dict[str, str]  # zoo field -> transformers field, for those the class has
    dropouts: tuple[str, ...]  # transformers fields that zoo's `dropout` sets
    # transformers fields whose unset value zoo derives from its own shape rather than
    # taking transformers' default (an MLP width of 11008 would swamp a 128-wide model)
    derived: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    mlp_width: str | None = None  # the transformers field of the MLP's hidden width
    ids_optional: bool = True  # whether its bos/eos token ids may be None


def config_class_of(model_type: str) -> type:
    return transformers.CONFIG_MAPPING[model_type]


def _own_name(config_class: type, names: tuple[str, ...], fields: set[str]) -> str | None:
    """The first of ``names`` the class has, through its attribute_map."""
    aliases = getattr(config_class, "attribute_map", {}) or {}
    for name in names:
        own = aliases.get(name, name)
        if own in fields:
            return own
    return None


@functools.cache
def layout_of(model_type: str) -> Layout:
    """The generic rule: zoo's shape fields through the class's standard attribute names
    (and their aliases), every float field named like a dropout, and the sizes that follow
    from the shape (the MLP's width 4 x n_embd, a head's width n_embd / n_head, as many
    key-value heads as heads) where the class has them."""
    config_class = config_class_of(model_type)
    kinds = {f.name: _field_type(f.type) for f in dataclasses.fields(config_class)}
    fields = set(kinds)
    shape = {zoo: _own_name(config_class, names, fields) for zoo, names in SHAPE_NAMES.items()}
    mapped = {zoo: own for zoo, own in shape.items() if own is not None}
    mlp_width = _own_name(config_class, MLP_NAMES, fields)
    derived: dict[str, Callable[[Any], Any]] = {}
    # every MLP width (a mixture of experts' expert and shared-expert widths, an
    # encoder-decoder's two stacks' widths too)
    widths = [n for n in fields if n.endswith(("intermediate_size", "ffn_dim"))]
    for name in [mlp_width, *widths]:
        if name is not None and kinds[name] is int:
            derived[name] = lambda cfg: 4 * cfg.n_embd
    # an encoder-decoder's other stack, shaped as the one the standard names map to (BART's
    # decoder_layers as its encoder_layers; SeamlessM4T's encoder as its decoder)
    for zoo_name, names in (*DECODER_STACK.items(), *ENCODER_STACK.items()):
        own = _own_name(config_class, names, fields)
        if own is not None and zoo_name in mapped and own != mapped[zoo_name]:
            derived[own] = operator.attrgetter(zoo_name)
    if "n_head" in mapped:
        for name in ("head_dim", "rotary_dim"):  # a head's width; rotary: all of it
            if name in fields:
                derived[name] = lambda cfg: cfg.n_embd // cfg.n_head
        if "num_key_value_heads" in fields:
            derived["num_key_value_heads"] = lambda cfg: cfg.n_head
        derived.update(_ssm_sizes(config_class, fields))
    # a local attention's window spans half the context: Longformer's and LED's
    # attention_window (even; every input is padded to a multiple of it) and LongT5's
    # local_radius (on each side); their defaults, 512 and 127, would make every 16-token
    # input hundreds of positions wide
    if "attention_window" in fields:
        derived["attention_window"] = lambda cfg: max(2, cfg.block_size // 4 * 2)
    if "local_radius" in fields:
        derived["local_radius"] = lambda cfg: max(1, cfg.block_size // 4)
    derived.update(_sparse_attention(config_class, fields))
    dropouts = tuple(
        sorted(name for name, kind in kinds.items() if kind is float and DROPOUT.search(name))
    )
    dropouts = tuple(name for name in dropouts if name not in NO_DROPOUT.get(model_type, ()))
    derived.update(OVERRIDES.get(model_type, {}))
    types_of = {f.name: f.type for f in dataclasses.fields(config_class)}
    ids_optional = all(
        _allows_none(types_of.get(name, None)) for name in ("bos_token_id", "eos_token_id")
    )
    return Layout(config_class, mapped, dropouts, derived, mlp_width, ids_optional)


def _ssm_sizes(config_class: type, fields: set[str]) -> dict[str, Callable[[Any], Any]]:
    """A Mamba-2 mixer's sizes, from the shape (see SSM_HEADS)."""
    expand_name = next((n for n in SSM_EXPAND if n in fields), None)
    if expand_name is None or not any(n in fields for n in SSM_HEADS + SSM_GROUPS):
        return {}
    default: Any = {f.name: f.default for f in dataclasses.fields(config_class)}[expand_name]

    def inner(cfg) -> int:
        return int(getattr(cfg, expand_name, None) or default) * cfg.n_embd

    sizes: dict[str, Callable[[Any], Any]] = {}
    for name in fields:
        if name in SSM_HEADS:
            sizes[name] = lambda cfg: cfg.n_head
        elif name in SSM_HEAD_WIDTH:
            sizes[name] = lambda cfg: inner(cfg) // cfg.n_head
        elif name in SSM_INNER:
            sizes[name] = inner
        elif name in SSM_GROUPS:
            sizes[name] = lambda cfg: 1
    return sizes


def _sparse_attention(config_class: type, fields: set[str]) -> dict[str, Callable[[Any], Any]]:
    """A block-sparse attention (BigBird's) with a context too short for it is full
    attention from the start. transformers would switch to it at the first forward, making
    new attention layers there and so drawing from torch's generator mid-run: a resumed run
    would draw again after its checkpoint and train on other dropout masks."""
    if not {"attention_type", "num_random_blocks", "block_size"} <= fields:
        return {}
    default: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(config_class)}

    def attention_type(cfg) -> str:
        blocks = getattr(cfg, "num_random_blocks", None) or default["num_random_blocks"]
        # transformers' bound: 2 global, 3 sliding and 2 x random blocks (its block_size,
        # which zoo's context hides, stays the default)
        if cfg.block_size <= (5 + 2 * blocks) * default["block_size"]:
            return "original_full"
        return default["attention_type"]

    return {"attention_type": attention_type}


def _allows_none(annotation) -> bool:
    return annotation is None or type(None) in typing.get_args(annotation)


def _gpt_neo_layers(cfg) -> list:
    """GPT-Neo's global and local attention alternating over n_layer layers."""
    return [[["global", "local"], cfg.n_layer // 2]] + [[["global"], cfg.n_layer % 2]]


def _zamba2_layers(cfg) -> list[str]:
    """Zamba2's Mamba2 layers with a shared-attention (hybrid) one after every five, as its
    default does, over n_layer layers."""
    return ["hybrid" if i % 6 == 5 else "linear_attention" for i in range(cfg.n_layer)]


def _offset_positions(cfg) -> int:
    """RoBERTa counts positions from the padding id + 1 (zoo's padding id is 0), so its
    table needs that many more rows than the longest input."""
    return cfg.block_size + 2


# RoBERTa's position scheme, in the types that copy its embeddings
OFFSET_POSITIONS = (
    "roberta",
    "roberta-prelayernorm",
    "camembert",
    "xlm-roberta",
    "xlm-roberta-xl",
    "data2vec-text",
    "xmod",
    "ibert",
    "longformer",
    "luke",
    "mpnet",
    "esm",
    "lilt",
    "markuplm",
    "layoutlmv3",
)

# --8<-- [start:overrides]
# Per-type corrections where the generic rule fails, each with its reason (and a test).
OVERRIDES: dict[str, dict[str, Callable[[Any], Any]]] = {
    **{t: {"max_position_embeddings": _offset_positions} for t in OFFSET_POSITIONS},
    # positions count from the padding id + 1, as RoBERTa's, and the predicting stream
    # reads the position after each: a table of block_size + 2 rows
    "prophetnet": {"max_position_embeddings": _offset_positions},
    # the class leaves the experts each token picks unset (None), for a checkpoint to set
    "deepseek_v2": {"num_experts_per_tok": lambda cfg: 2},
    # Mamba2 splits its expanded inner width (expand x hidden_size, expand 2), not the
    # hidden width, into num_heads heads: head_dim is that over n_head
    "mamba2": {
        "head_dim": lambda cfg: (getattr(cfg, "expand", None) or 2) * cfg.n_embd // cfg.n_head
    },
    # its local attention's block_size (512; every input is padded to a multiple of it)
    # shares the name of zoo's context, so no --set reaches it: half the context, even
    # (a staggered block is shifted by half of it)
    "pegasus_x": {"block_size": lambda cfg: max(2, cfg.block_size // 4 * 2)},
    # the default lists the attention kind of each of its 24 layers, which must match
    # num_layers
    "gpt_neo": {"attention_types": _gpt_neo_layers},
    # the default lists the kind of each of its 54 layers, which must match n_layer
    "zamba2": {"layers_block_type": _zamba2_layers},
    # its one attention layer in every 8 (the 5th) lies beyond a small depth, and
    # transformers' cache (generation, and so export) needs one: one in every
    # min(8, n_layer), in the middle of each period
    "jamba": {
        "attn_layer_period": lambda cfg: min(8, cfg.n_layer),
        "attn_layer_offset": lambda cfg: min(8, cfg.n_layer) // 2,
    },
}


# Dropouts a type refuses to apply, which zoo's `dropout` leaves at transformers' default
# (they stay settable, for transformers to refuse in its own words).
NO_DROPOUT = {
    # differential attention has no defined dropout: DiffLlama raises for attention_dropout > 0
    "diffllama": ("attention_dropout",),
}

# The least depth of a type that transformers cannot build shallower, and why: a shallower
# n_layer exits 2 before anything is tokenized or trained.
MIN_LAYERS = {
    # its initialisation spreads the time-mixing weights over the depth by
    # layer_id / (num_hidden_layers - 1), which divides by zero at one layer, when
    # transformers builds a model and when it loads a checkpoint: no setting avoids it
    "rwkv": (2, "transformers' RWKV initialisation divides by num_hidden_layers - 1"),
}

# Types whose forward drops the decoder's causal mask when the cache is on (it then assumes
# one new token at a time): their models keep use_cache off, so that a forward over a whole
# target, as zoo trains and as an export's user calls it, reads no later token; generate()
# still decodes with its cache, one token at a time.
NO_CACHE = {"fsmt"}
# --8<-- [end:overrides]


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
    model_type: typing.ClassVar[str] = ""

    def __post_init__(self):
        for name in ("n_layer", "n_head", "n_embd", "block_size"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        least, why = MIN_LAYERS.get(self.model_type, (1, ""))
        if self.n_layer is not None and self.n_layer < least:
            raise ValueError(
                f"{self.architecture} needs n_layer of {least} or more ({why}), got {self.n_layer}"
            )
        # n_head is no error where the type has no heads (Mamba, RWKV): one --set of
        # shapes serves every type in a sweep
        for name in ("n_layer", "n_embd"):
            if getattr(self, name) is not None and name not in self.layout.shape:
                raise ValueError(
                    f"{self.architecture} has no {name} (its config, "
                    f"{self.layout.config_class.__name__}, names no {SHAPE_NAMES[name][0]} "
                    "or an alias of it); leave it unset"
                )
        self.transformers_config(vocab_size=8)  # a setting transformers rejects fails now

    @property
    def layout(self) -> Layout:
        return layout_of(self.model_type)

    def extra_fields(self) -> dict[str, Any]:
        """The transformers fields set in this config (None: not set)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in COMMON_FIELDS and getattr(self, f.name) is not None
        }

    def transformers_config(self, vocab_size: int, **task_fields):
        """The transformers config this describes: the checkpoint's (pretrained) or a new
        one, with zoo's fields applied. Raises ValueError for what cannot work."""
        layout = self.layout
        if self.pretrained:
            config = checkpoint_config(self.pretrained, self.model_type)
            _check_against_checkpoint(self, config, layout)
            values = self.extra_fields()
        else:
            config = self._new_config(vocab_size, layout)
            values = {}
        values.update({name: self.dropout for name in layout.dropouts}, **task_fields)
        for name, value in values.items():
            setattr(config, name, value)
        if "n_head" in layout.shape:
            _check_heads(
                getattr(config, layout.shape["n_embd"]), getattr(config, layout.shape["n_head"])
            )
        return config

    def _new_config(self, vocab_size: int, layout: Layout):
        shape: dict[str, int] = {}  # each shape setting, or a new model's default for it
        for name in SHAPE_NAMES:
            value = getattr(self, name)
            shape[name] = NEW_MODEL_SHAPE[name] if value is None else value
        values: dict[str, Any] = {target: shape[name] for name, target in layout.shape.items()}
        if "n_head" in layout.shape:
            _check_heads(shape["n_embd"], shape["n_head"])
        known = types.SimpleNamespace(**shape, **self.extra_fields())  # what derives from
        for name, derive in layout.derived.items():
            # a field named like one of zoo's (PegasusX's block_size) cannot be set: always
            # derived
            if name in COMMON_FIELDS or getattr(self, name, None) is None:
                values[name] = derive(known)
        values.update(self.extra_fields())
        # zoo's tokenizers have no begin/end tokens (GPT-2's default ids are 50256); a class
        # whose ids must be numbers keeps its own (read by generation only)
        values.update(vocab_size=vocab_size)
        values.update(
            {name: None for name in ("bos_token_id", "eos_token_id") if layout.ids_optional}
        )
        try:
            config = layout.config_class(**values)
        except Exception as exc:  # transformers' strict validation of a field
            raise ValueError(_first_line(exc)) from None
        if hasattr(type(config), "allow_global_per_layer_attribute_access"):
            # a class whose layers may differ (per-layer configs): zoo builds every layer
            # alike, so its global shape fields are the layers' own and safe to read
            config.allow_global_per_layer_attribute_access = True
        return config


COMMON_FIELDS = {f.name for f in dataclasses.fields(TransformersConfig)}


def _check_against_checkpoint(cfg: TransformersConfig, config, layout: Layout) -> None:
    for name, target in layout.shape.items():
        value, theirs = getattr(cfg, name), getattr(config, target)
        if name == "block_size":
            if value > theirs:
                raise ValueError(f"block_size {value} exceeds the checkpoint's {target} ({theirs})")
        elif value is not None and value != theirs:
            raise ValueError(
                f"{name}={value} differs from the checkpoint's {target} "
                f"({theirs}); leave it unset to take the checkpoint's"
            )


def _check_heads(width: int, heads: int) -> None:
    """In zoo's names, before transformers' own check says it in its names (or not at all)."""
    if width % heads:
        raise ValueError(f"n_embd ({width}) must be divisible by n_head ({heads})")


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


def checkpoint_config(source: str, model_type: str):
    """The transformers config of a checkpoint folder or Hub id, checked to be of the
    model type. Raises ValueError naming the source."""
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
    if config.model_type != model_type:
        raise ValueError(
            f"checkpoint {source!r} is a {config.model_type} model, not {model_type}; "
            f"use the architecture hf-{config.model_type}"
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


@functools.cache
def make_config(architecture: str) -> type:
    """The zoo config dataclass of one architecture: the common fields, then one optional
    field per scalar field of its transformers config class."""
    model_type = model_type_of(architecture)
    layout = layout_of(model_type)
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
    words = re.split(r"[^A-Za-z0-9]+", architecture)
    cls: type[TransformersConfig] = dataclasses.make_dataclass(
        "".join(w[:1].upper() + w[1:] for w in words) + "Config",
        extra,
        bases=(TransformersConfig,),
    )
    cls.architecture, cls.model_type = architecture, model_type
    # pickle finds the class by this name, through the module's __getattr__ below
    cls.__module__, cls.__qualname__ = __name__, architecture
    cls.__doc__ = (
        f"zoo config of the {architecture!r} architecture (transformers "
        f"{layout.config_class.__name__}); unset fields take transformers' defaults"
    )
    return cls


def __getattr__(name: str) -> type:
    """The config class of an architecture, by its name (``hf-mamba``, ``gpt2``), as the
    plugin registers it: made on first use."""
    if name in architecture_names():
        return make_config(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
