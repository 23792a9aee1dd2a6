"""Limits on values the user gives, checked before anything is written or allocated.

A seed too large for NumPy or SQLite, or a size that no machine can allocate (a BPE
vocabulary of 10^9 makes the Rust allocator abort the process), is a user error: exit 2
with one line, before a run folder or store row exists.
"""
from __future__ import annotations

import argparse
import os

from zoo.errors import ZooError

DEVICES = ("auto", "cpu", "cuda")  # auto: CUDA when torch sees it, else the CPU
MAX_SEED = 2**32 - 1  # NumPy's global seed is 32-bit; SQLite and torch take more
MAX_VOCAB = 2**20  # tokens in a trained vocabulary (GPT-2 has 50,257)
MAX_BLOCK = 2**16  # tokens in a context window
MAX_WIDTH = 2**15  # n_embd and other layer widths
MAX_MLP_WIDTH = MAX_WIDTH * 64  # an MLP's hidden width: the widest layer at mlp_ratio's limit
MAX_LAYERS = 1024
MAX_BATCH = 2**16  # sequences in a batch (zoo verify --batch, batch_size)
MAX_PREDICT_BYTES = 64 * 2**20  # zoo predict --file
MAX_PREDICT_LINES = 1_000_000

# Size-like config fields (model, tokenizer, training and dataset sections) and their
# limits, enforced on every config however it arrives: --set, a preset, or a run's
# config.json (a tampered one included).
SIZE_FIELDS = {
    "vocab_size": MAX_VOCAB, "block_size": MAX_BLOCK, "max_len": MAX_BLOCK,
    "n_embd": MAX_WIDTH, "width": MAX_WIDTH, "n_head": MAX_WIDTH, "heads": MAX_WIDTH,
    "intermediate_size": MAX_MLP_WIDTH, "n_inner": MAX_MLP_WIDTH,
    "n_layer": MAX_LAYERS, "blocks": MAX_LAYERS, "mlp_ratio": 64, "ff_ratio": 64,
    "batch_size": MAX_BATCH, "eval_batch_size": MAX_BATCH, "eval_batches": MAX_BATCH,
    "bucket_batches": MAX_BATCH, "eval_windows": 2**20, "sample_tokens": 2**20,
    "samples": 10_000, "train_size": 2**24, "validation_size": 2**24, "test_size": 2**24,
    "heldout_size": 2**24, "buckets": 2**24, "bag_buckets": 2**24, "nb_buckets": 2**24,
    "nb_char_buckets": 2**24,
    "dim": MAX_WIDTH,
    "bag_dim": MAX_WIDTH,
    "hidden": MAX_WIDTH, "lstm_hidden": MAX_WIDTH, "lstm_layers": MAX_LAYERS,
    "members": 1024, "lstm_members": 1024,
}
# The fields a transformer's size is read from, whichever architecture's names they are.
WIDTH_FIELDS = ("n_embd", "width")
DEPTH_FIELDS = ("n_layer", "blocks")
MLP_WIDTH_FIELDS = ("intermediate_size", "n_inner")  # transformers' names for the MLP's width
MLP_RATIO_FIELDS = ("mlp_ratio", "ff_ratio")  # the MLP's width over the model's (encoder, digits)
COPIES_FIELDS = ("members",)  # networks trained side by side in one run (the encoder's ensemble)
# A bidirectional LSTM's (copies, state width, layers) fields: the lstm architecture's (one
# network, whose n_layer counts LSTM layers, not transformer blocks), the encoder's members.
LSTM_FIELDS = ((None, "hidden", "n_layer"), ("lstm_members", "lstm_hidden", "lstm_layers"))
# Hashed n-gram tables as (rows, width) fields: fasttext's, and the encoder's bag member's.
TABLE_FIELDS = (("buckets", "dim"), ("bag_buckets", "bag_dim"))
BYTES_PER_PARAMETER = 16  # fp32 weights, gradients and two Adam moments


def check_seed(seed, what: str = "--seed") -> int:
    """A seed zoo can use everywhere: a whole number from 0 to MAX_SEED."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ZooError(f"{what} must be a whole number from 0 to {MAX_SEED}, not {seed!r}")
    return seed


def seed_argument(text: str) -> int:
    """argparse type for --seed."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to {MAX_SEED}, "
                                         f"not {text}")
    return value


def check_sizes(config, where: str = "") -> None:
    """Every size-like field of a config dataclass within its limit, and a transformer's
    weights and optimizer state (estimated_parameters) within this machine's memory."""
    for name, limit in SIZE_FIELDS.items():
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > limit:
            raise ZooError(f"{where}{name} = {value:,} is more than zoo can allocate "
                           f"(at most {limit:,})")
    parameters = estimated_parameters(config)
    memory = physical_memory()
    if parameters and memory and parameters * BYTES_PER_PARAMETER > memory:
        raise ZooError(f"{where}a model of about {parameters / 1e6:,.0f} million parameters "
                       f"needs about {parameters * BYTES_PER_PARAMETER / 2**30:,.0f} GiB to "
                       f"train; this machine has {memory / 2**30:,.0f} GiB")


def estimated_parameters(config) -> int | None:
    """About how many parameters a model of this config has, before anything is built. A
    transformer: per layer 4 x width^2 of attention and 2 x width x the MLP's width
    (intermediate_size or n_inner if set, else mlp_ratio or ff_ratio x width, else 4 x
    width), plus the position table, for each of the run's `members`. Plus any hashed
    n-gram table (buckets x dim), and any bidirectional LSTM (per layer and direction, four
    gates over the layer's input and state). Biases, norms, the token embedding (whose
    vocabulary is not known yet) and the third matrix of a gated MLP (llama's) are left out.
    None for a config with none of these."""
    total = 0
    width, depth = _first(config, WIDTH_FIELDS), _first(config, DEPTH_FIELDS)
    for copies_field, hidden_field, layers_field in LSTM_FIELDS:
        copies = _first(config, (copies_field,)) if copies_field else 1
        hidden, layers = _first(config, (hidden_field,)), _first(config, (layers_field,))
        if copies and hidden and layers:
            inputs = [width or 0] + [2 * hidden] * (layers - 1)
            total += copies * sum(8 * hidden * (fan_in + hidden) for fan_in in inputs)
    if width and depth and not _first(config, ("hidden",)):  # a transformer
        mlp = _first(config, MLP_WIDTH_FIELDS) or (_first(config, MLP_RATIO_FIELDS) or 4) * width
        block = _first(config, ("block_size",)) or 0
        copies = _first(config, COPIES_FIELDS) or 1
        total += copies * (depth * (4 * width * width + 2 * width * mlp) + block * width)
    for rows, row_width in TABLE_FIELDS:
        total += (_first(config, (rows,)) or 0) * (_first(config, (row_width,)) or 0)
    return total or None


def _first(config, names) -> int | None:
    """The value of the first of ``names`` that the config sets to a positive whole number."""
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_file_size(path, limit: int, what: str) -> None:
    """A file the user names, read whole, within ``limit`` bytes."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return  # reading it reports the problem
    if size > limit:
        raise ZooError(f"{what} {path} is {size / 2**20:,.1f} MiB; at most "
                       f"{limit / 2**20:,.0f} MiB")
