"""A dataset split as one array of token ids, built the way ``datasets`` is meant to be used.

A split's text is its rows joined by newlines. It is tokenized by a batched
``Dataset.map`` over Arrow batches (no Python loop over rows): each batch of rows becomes
one text, encoded by the tokenizer's ``encode_text`` into one array. ``map`` is given a
fingerprint made of the split's own fingerprint, the tokenizer's saved form and the column,
so a second run on the same data with the same tokenizer finds the tokenized Arrow cache
and reads it instead of tokenizing again.

Ids are held in the smallest unsigned integer type that fits the vocabulary (uint8 for
characters, uint16 for BPE, as nanoGPT's prepare.py writes uint16 files), in a flat file
next to the zoo's other caches that is memory-mapped, so a large corpus costs page cache,
not resident memory. Consumers cast the windows they take to int64.

Where each row must stay a text of its own (a text to classify, a context and its next
item), ``row_ids`` encodes the rows the same way, one ``Tokenizer.encode_rows`` per batch,
into one ragged array: all rows' ids and their offsets, cached in the map's Arrow file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from zoo.core.phases import phase
from zoo.tokenizer import check_ids

FORMAT = 2  # bump when what a cached token file holds changes
ROWS_PER_BATCH = 10_000  # rows per map batch: one text each, encoded at once


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned integer type that holds every id of the vocabulary."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if vocab_size <= np.iinfo(dtype).max + 1:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def column_of(split, column: str):
    """The split's column as one Arrow array, rows in the split's order. A split carved
    from a shuffled dataset is an index mapping over the source table; one Arrow ``take``
    gathers it (the datasets library gathers such splits a row at a time)."""
    values = split.data.table.column(column)
    indices = split._indices  # private, but the only way to the mapping in one piece
    if indices is not None:
        values = values.take(indices.column(0))
    return values.combine_chunks()


def text_batches(split, column: str, rows: int = ROWS_PER_BATCH) -> Iterator[str]:
    """The split's text in pieces of ``rows`` rows (each piece but the last ends with the
    newline that joins it to the next); joined by Arrow, without a Python object per row."""
    values = column_of(split, column)
    for start in range(0, len(values), rows):
        yield join_rows(values.slice(start, rows), last=start + rows >= len(values))


def join_rows(column, last: bool = True) -> str:
    """One string: the rows of an Arrow string column joined by newlines, with one more at
    the end unless these are the ``last`` rows of the split."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(column) == 0:
        return ""
    lists = pa.ListArray.from_arrays(pa.array([0, len(column)], pa.int32()), column)
    newline = pa.scalar("\n", type=column.type)  # string or large_string, as the column
    return pc.binary_join(lists, newline)[0].as_py() + ("" if last else "\n")


def split_size(split, column: str) -> tuple[int, int]:
    """Characters and UTF-8 bytes of the split's text (rows and the newlines between them),
    counted by Arrow. A split carved by an index mapping gathers its rows' lengths, not its
    text."""
    import pyarrow.compute as pc

    values = split.data.table.column(column)
    chars, data = pc.utf8_length(values), pc.binary_length(values)
    if split._indices is not None:
        rows = split._indices.column(0)
        chars, data = chars.take(rows), data.take(rows)
    newlines = max(0, len(split) - 1)
    return (pc.sum(chars).as_py() or 0) + newlines, (pc.sum(data).as_py() or 0) + newlines


def cache_root() -> Path:
    from zoo.data.tokenizer_cache import cache_root as tokenizer_cache

    return tokenizer_cache().parent / "tokens"


def fingerprint(split, column: str, tokenizer, kind: str = "") -> str:
    """What the token array depends on: the split's rows, the column, the tokenizer (and
    the ``kind`` of array: "" for the joined text, "rows" for rows encoded one by one)."""
    digest = hashlib.sha256(saved_form(tokenizer))
    digest.update(
        f"|{type(tokenizer).__qualname__}|{split._fingerprint}|{column}|{FORMAT}".encode()
    )
    if kind:
        digest.update(f"|{kind}".encode())
    return digest.hexdigest()[:32]


def saved_form(tokenizer) -> bytes:
    """The bytes ``tokenizer.save`` writes: a tokenizers-backed one's JSON straight from
    its backend (saving through a file costs a sync per call), any other through a file."""
    from zoo.tokenizer import TokenizersTokenizer

    if type(tokenizer).save is TokenizersTokenizer.save:
        return tokenizer.backend.to_str(pretty=False).encode("utf-8")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tokenizer.json"
        tokenizer.save(path)
        return path.read_bytes()


@phase("data")
def split_ids(split, column: str, tokenizer, *, say=None) -> np.ndarray:
    """The split's token ids as one memory-mapped array of the smallest fitting dtype."""
    dtype = token_dtype(tokenizer.vocab_size)
    key = fingerprint(split, column, tokenizer)
    path = cache_root() / f"{key}.{dtype.name}"
    if not path.is_file():
        mapped = tokenize(split, column, tokenizer, dtype, key)
        _write(mapped, path, dtype)
        if say:
            name = getattr(split, "split", None)  # the split's name, where it keeps one
            where = f" of the {name} split" if name else ""
            say(
                f"tokenized {len(split):,} rows{where} ({column!r}): {_count(path, dtype):,} "
                f"tokens ({dtype.name}, {path})"
            )
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")


def tokenize(split, column: str, tokenizer, dtype: np.dtype, key: str):
    """The batched, cached ``Dataset.map``: one output row of ids per batch of input rows,
    over the split's rows gathered in one piece (see ``column_of``). Its Arrow cache file
    is named by ``key``, so the same rows and tokenizer find it again."""
    import pyarrow as pa

    def encode(table, indices):
        text = join_rows(table.column(column), last=indices[-1] == len(split) - 1)
        ids = check_ids(tokenizer, tokenizer.encode_text(text)).astype(dtype, copy=False)
        offsets = pa.array([0, len(ids)], pa.int32())
        return pa.table({"ids": pa.ListArray.from_arrays(offsets, pa.array(ids))})

    return _map(split, column, encode, key, with_indices=True)


@phase("data")
def row_ids(split, column: str, tokenizer) -> tuple[np.ndarray, np.ndarray]:
    """Every row of the split encoded on its own (a text to classify, a context, a target),
    as one ragged array: all rows' ids one after another, in the smallest dtype, and
    offsets [rows + 1] (row i is ``ids[offsets[i]:offsets[i + 1]]``). Tokenized like
    ``split_ids``, by a batched and cached ``Dataset.map`` (each batch of rows is one
    ``Tokenizer.encode_rows``), so a second run reads the Arrow cache. A value that is not
    text is encoded as its text form ("4" for 4), a missing one as ""."""
    import pyarrow as pa
    import pyarrow.compute as pc

    dtype = token_dtype(tokenizer.vocab_size)

    def encode(table):
        ids, offsets = tokenizer.encode_rows(row_texts(table.column(column)))
        check_ids(tokenizer, ids)
        lists = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(ids.astype(dtype)))
        return pa.table({"ids": lists})

    mapped = _map(split, column, encode, fingerprint(split, column, tokenizer, kind="rows"))
    lists = mapped.data.column("ids")
    offsets = np.zeros(len(mapped) + 1, dtype=np.int64)
    np.cumsum(pc.list_value_length(lists).to_numpy(), out=offsets[1:])
    ids = pc.list_flatten(lists).to_numpy() if len(mapped) else np.zeros(0, dtype)
    return ids.astype(dtype, copy=False), offsets


def row_texts(values) -> list[str]:
    """An Arrow column's values as texts (Arrow casts and fills them; no Python step per row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        values = pc.cast(values, pa.string())
    return pc.fill_null(values, "").to_pylist()


def _map(split, column: str, encode, key: str, *, with_indices: bool = False):
    """``Dataset.map(encode, batched=True)`` over the split's rows of ``column`` (gathered
    in one piece, see ``column_of``), as Arrow tables, cached in a file named by ``key``."""
    import datasets
    import pyarrow as pa

    rows = (
        split
        if split._indices is None
        else datasets.Dataset(
            pa.table({column: column_of(split, column)}), fingerprint=f"{split._fingerprint}-rows"
        )
    )
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return rows.with_format("arrow").map(
        encode,
        batched=True,
        with_indices=with_indices,
        batch_size=ROWS_PER_BATCH,
        remove_columns=rows.column_names,
        new_fingerprint=key,
        cache_file_name=str(root / f"{key}.arrow"),
        desc="tokenizing",
    )


def _write(mapped, path: Path, dtype: np.dtype) -> None:
    """The flat file, written chunk by chunk (never the whole array in memory) to a
    temporary name and renamed into place, so a concurrent or crashed run never leaves half
    a file under the final name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        from zoo.io import new_file_mode

        os.fchmod(handle, new_file_mode())  # a shared cache, readable as open() would make it
        with os.fdopen(handle, "wb") as out:
            for chunk in mapped.data.column("ids").chunks:
                out.write(
                    chunk.flatten()
                    .to_numpy(zero_copy_only=False)
                    .astype(dtype, copy=False)
                    .tobytes()
                )
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.unlink(staging)


def _count(path: Path, dtype: np.dtype) -> int:
    return path.stat().st_size // dtype.itemsize
