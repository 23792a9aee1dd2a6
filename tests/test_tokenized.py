"""Token arrays of dataset splits: the batched Dataset.map gives the ids the text encodes to,
in the smallest dtype, memory-mapped; a second run reuses the cache (the flat file, else the
Arrow file of the map); the final evaluation keeps to its token budget and says so."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import TINY_DECODER, run_cli
from zoo.plugins.bpe import BPEConfig, BPETokenizer
from zoo.plugins.char import CharConfig, CharTokenizer
from zoo.plugins.fasttext.wordpunct import WordPunctTokenizer

from zoo.core.loading import get_zoo
from zoo.data import datasets as data
from zoo.data import encoded
from zoo.tokenizer import ragged, unragged


@pytest.fixture
def text_dataset(tiny_text):
    # a local text file: validation and test are carved out of it by a shuffled index mapping
    zoo = get_zoo()
    return data.load(data.resolve(str(tiny_text), zoo), zoo)


def rows_text(split, column) -> str:
    return "\n".join(split[column])  # the slow way, as a reference


@pytest.mark.parametrize("role", ["train", "validation"])
def test_split_ids_are_the_text_encoded_in_the_smallest_dtype(text_dataset, role, monkeypatch):
    monkeypatch.setattr(encoded, "ROWS_PER_BATCH", 37)  # several map batches
    split, column = text_dataset.split(role), text_dataset.text_column
    char = CharTokenizer.train([rows_text(text_dataset.split("train"), column)])
    bpe = BPETokenizer.train(
        [rows_text(text_dataset.split("train"), column)], BPEConfig(vocab_size=300)
    )
    for tokenizer, dtype in ((char, np.uint8), (bpe, np.uint16)):
        ids = encoded.split_ids(split, column, tokenizer)
        assert isinstance(ids, np.memmap) and ids.dtype == dtype
        expected = tokenizer.encode_batch(rows_text(split, column).splitlines(keepends=True))
        assert ids.tolist() == [i for line in expected for i in line]
    assert encoded.split_size(split, column) == (len(rows_text(split, column)),) * 2


def test_char_tokenizer_trains_and_encodes_long_texts_in_numpy():
    text = "ab\nc\u2603\n" * 100
    tokenizer = CharTokenizer.train([text[:300], text[300:]])
    assert tokenizer.encode_text(text + "Z").tolist() == tokenizer.encode(text + "Z")
    assert tokenizer.encode("Z") == [tokenizer.unk_id]


def test_a_second_run_reuses_the_token_cache(text_dataset, monkeypatch):
    split, column = text_dataset.split("train"), text_dataset.text_column
    tokenizer = CharTokenizer.train([rows_text(split, column)])
    calls = []
    original = CharTokenizer.encode_text
    monkeypatch.setattr(
        CharTokenizer, "encode_text", lambda self, text: calls.append(1) or original(self, text)
    )
    first = np.array(encoded.split_ids(split, column, tokenizer))
    assert calls
    calls.clear()
    assert np.array_equal(encoded.split_ids(split, column, tokenizer), first) and not calls
    # Without the flat file, the Arrow cache of the map is read instead of tokenizing again.
    for flat in encoded.cache_root().glob("*.uint8"):
        flat.unlink()
    assert np.array_equal(encoded.split_ids(split, column, tokenizer), first) and not calls
    # Another tokenizer is another cache entry.
    other = CharTokenizer.train([rows_text(split, column) + "#"])
    encoded.split_ids(split, column, other)
    assert calls


@pytest.mark.slow
def test_final_evaluation_keeps_to_the_token_budget_and_says_so(tiny_text):
    whole = run_cli("run", "decoder-char", tiny_text, "--steps", 2, "--json", *TINY_DECODER)
    budget = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        2,
        "--json",
        *TINY_DECODER,
        "--set",
        "eval_tokens=200",
    )
    assert whole.code == 0 and budget.code == 0, budget
    said = run_cli(
        "run", "decoder-char", tiny_text, "--steps", 2, *TINY_DECODER, "--set", "eval_tokens=200"
    )
    told = said.out + said.err
    assert "validation: scored 192 of" in told and "test: scored 192 of" in told, said
    full, sampled = (json.loads(r.out)["metrics"] for r in (whole, budget))
    assert full["val_loss"] != sampled["val_loss"]
    assert sampled["val_loss"] == pytest.approx(full["val_loss"], rel=0.2)
    assert sampled["val_bpc"] == pytest.approx(full["val_bpc"], rel=0.2)


def test_large_string_columns_tokenize_too():
    import datasets
    import pyarrow as pa

    rows = ["first line", "second", "third one"]
    split = datasets.Dataset(pa.table({"text": pa.array(rows, type=pa.large_string())}))
    tokenizer = CharTokenizer.train(["\n".join(rows)])
    ids = encoded.split_ids(split, "text", tokenizer)
    assert ids.tolist() == tokenizer.encode("\n".join(rows))


def unflatten(ids, offsets) -> list[list[int]]:
    return [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]


@pytest.mark.parametrize("role", ["train", "validation"])
def test_row_ids_are_every_row_encoded_on_its_own(text_dataset, role, monkeypatch):
    monkeypatch.setattr(encoded, "ROWS_PER_BATCH", 37)  # several map batches
    split, column = text_dataset.split(role), text_dataset.text_column
    train_text = rows_text(text_dataset.split("train"), column)
    for tokenizer, dtype in (
        (CharTokenizer.train([train_text]), np.uint8),
        (BPETokenizer.train([train_text], BPEConfig(vocab_size=300)), np.uint16),
    ):
        ids, offsets = encoded.row_ids(split, column, tokenizer)
        assert ids.dtype == dtype and len(offsets) == len(split) + 1
        assert unflatten(ids, offsets) == [tokenizer.encode(text) for text in split[column]]


def test_row_ids_reuse_the_cache_and_encode_values_as_text(monkeypatch):
    import datasets
    import pyarrow as pa

    split = datasets.Dataset(pa.table({"label": pa.array([4, None, 12], pa.int64())}))
    tokenizer = CharTokenizer.train(["0123456789"])
    ids, offsets = encoded.row_ids(split, "label", tokenizer)
    assert unflatten(ids, offsets) == [tokenizer.encode("4"), [], tokenizer.encode("12")]
    calls = []
    original = CharTokenizer.encode_rows
    monkeypatch.setattr(
        CharTokenizer, "encode_rows", lambda self, texts: calls.append(1) or original(self, texts)
    )
    again = encoded.row_ids(split, "label", tokenizer)
    assert not calls and unflatten(*again) == unflatten(ids, offsets)


@pytest.mark.parametrize(
    "make",
    [
        lambda text: CharTokenizer.train([text]),
        lambda text: CharTokenizer.train([text], CharConfig(lowercase=True)),
        lambda text: BPETokenizer.train([text], BPEConfig(vocab_size=300)),
        lambda text: WordPunctTokenizer.train([text]),
    ],
    ids=["char", "char-lowercase", "bpe", "wordpunct"],
)
def test_encode_rows_is_encode_batch_in_one_array(make):
    texts = ["Hello, World!", "", "a\u2603 b\nc", "ZZZ unseen \u00e9", "<pad> text"]
    tokenizer = make("hello, world! a b c\n" * 20)
    ids, offsets = tokenizer.encode_rows(texts)
    assert ids.dtype == np.int64 and offsets.tolist()[0] == 0
    assert unflatten(ids, offsets) == tokenizer.encode_batch(texts)
    assert unragged(ids, offsets) == unflatten(ids, offsets) and unragged(*ragged([])) == []
    assert tokenizer.encode_batch(texts) == [tokenizer.encode(text) for text in texts]
    assert tokenizer.encode_rows([])[1].tolist() == [0] and tokenizer.encode_batch([]) == []


def test_the_default_eval_budget_keeps_every_catalogue_split_whole(mirror):
    """The final evaluation scores validation and test whole for every catalogue dataset: no
    tokenizer makes more tokens than a split has UTF-8 bytes (byte-level BPE at most one
    per byte, char one per character)."""
    from zoo.pipelines.language_modeling import LanguageModelingConfig

    budget = LanguageModelingConfig().eval_tokens
    zoo = get_zoo()
    names = [*zoo.catalogue.datasets, *zoo.datasets.names()]
    assert {"shakespeare", "rotten_tomatoes", "emotion", "digits"} <= set(names)
    for name in names:
        loaded = data.load(data.resolve(name, zoo), zoo, quiet=True)
        for role in ("validation", "test"):
            chars, size = encoded.split_size(loaded.split(role), loaded.text_column)
            assert size < budget, (name, role, size, budget)
