"""The tokenizer contract (char and bpe), the training cache, and bits per character."""

import functools
import json
import math

import numpy as np
import pytest
from conftest import TINY_DECODER, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from zoo.plugins.bpe import BPEConfig, BPETokenizer
from zoo.plugins.char import CharConfig, CharTokenizer

from zoo.data.tokenizer_cache import cache_root, train_cached

CORPUS = [
    "First Citizen:\nBefore we proceed any further, hear me speak.\n",
    "All:\nSpeak, speak.\r\n\tYou are all resolved rather to die than to famish?\n",
    "naïve café — ½ ∑ 日本語 🙂 <pad> <cls>\n",
] * 20
HYPOTHESIS = settings(max_examples=150, deadline=None)


@functools.cache
def bpe() -> BPETokenizer:
    return BPETokenizer.train(CORPUS, BPEConfig(vocab_size=300, min_frequency=2))


@functools.cache
def char() -> CharTokenizer:
    return CharTokenizer.train(CORPUS, None)


SEEN = sorted(set("".join(CORPUS)))


@HYPOTHESIS
@given(st.text())
def test_bpe_round_trips_arbitrary_unicode(text):
    ids = bpe().encode(text)
    assert bpe().unk_id not in ids  # byte-level: nothing is unknown
    assert bpe().decode(ids) == text


@HYPOTHESIS
@given(st.lists(st.text(), max_size=5))
def test_bpe_batches_agree_with_single_calls(texts):
    batch = bpe().encode_batch(texts)
    assert batch == [bpe().encode(t) for t in texts]
    assert bpe().decode_batch(batch) == texts


@HYPOTHESIS
@given(st.text(alphabet=SEEN))
def test_char_round_trips_every_string_of_seen_characters(text):
    ids = char().encode(text)
    assert len(ids) == len(text) and char().unk_id not in ids
    assert char().decode(ids) == text


@HYPOTHESIS
@given(st.text())
def test_char_fast_path_encodes_like_the_saved_tokenizer(text):
    assert char().encode(text) == char().backend.encode(text, add_special_tokens=False).ids
    assert char().encode_batch([text, text[::-1]]) == [
        e.ids for e in char().backend.encode_batch([text, text[::-1]], add_special_tokens=False)
    ]


def test_char_unseen_characters_are_unknown_and_lowercasing_folds_case():
    ids = char().encode("F\u2603")  # a snowman was never seen
    assert ids[1] == char().unk_id and char().decode(ids) == "F"
    lower = CharTokenizer.train(["Ab"], CharConfig(lowercase=True))
    assert lower.encode("AB") == lower.encode("ab") and lower.decode(lower.encode("AB")) == "ab"


@pytest.mark.parametrize("make", [bpe, char], ids=["bpe", "char"])
def test_special_tokens_come_from_the_contract(make):
    tokenizer = make()
    assert tokenizer.special_ids == {"<pad>": 0, "<unk>": 1, "<cls>": 2}
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id) == (0, 1, 2)
    # Text that spells a special token is text, not the special id.
    ids = tokenizer.encode("<pad> and <cls>")
    assert not set(ids) & {0, 1, 2}
    assert tokenizer.decode(ids) == "<pad> and <cls>"
    assert tokenizer.decode([2, *ids, 0, 0]) == "<pad> and <cls>"  # specials are left out


def test_bpe_vocabulary_holds_all_bytes_and_the_configured_size():
    tokenizer = BPETokenizer.train(CORPUS * 5, BPEConfig(vocab_size=280))
    assert tokenizer.vocab_size == 280
    assert len(tokenizer.encode("Citizen")) < len("Citizen")  # merges compress seen words
    with pytest.raises(ValueError, match="at least 259"):
        BPEConfig(vocab_size=258)


@pytest.mark.parametrize("make", [bpe, char], ids=["bpe", "char"])
def test_saved_and_reloaded_tokenizers_encode_identically(make, tmp_path):
    from tokenizers import Tokenizer as Backend

    tokenizer = make()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(path)
    reloaded = type(tokenizer).load(path)
    texts = CORPUS[:3] + ["unseen: ß ☃ \x00", "", "<unk>"]
    assert reloaded.encode_batch(texts) == tokenizer.encode_batch(texts)
    assert reloaded.vocab_size == tokenizer.vocab_size
    assert reloaded.special_ids == tokenizer.special_ids
    # The file is a plain tokenizers file: anyone can read it without zoo.
    plain = Backend.from_file(str(path))
    assert plain.encode(CORPUS[0], add_special_tokens=False).ids == tokenizer.encode(CORPUS[0])


def test_bpe_file_loads_in_transformers(tmp_path):
    import transformers  # a dependency of zoo: this test never skips

    path = tmp_path / "tokenizer.json"
    bpe().save(path)
    # split_special_tokens: a literal "<pad>" in the text is text, as in zoo.
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(path),
        pad_token="<pad>",
        unk_token="<unk>",
        cls_token="<cls>",
        split_special_tokens=True,
    )
    text = CORPUS[2]
    ids = fast.encode(text, add_special_tokens=False)
    assert ids == bpe().encode(text)
    assert fast.decode(ids) == text
    assert (fast.pad_token_id, fast.unk_token_id, fast.cls_token_id) == (0, 1, 2)


# --- the training cache ------------------------------------------------------------------


class CountingBPE(BPETokenizer):
    trained = 0

    @classmethod
    def train(cls, texts, config=None):
        cls.trained += 1
        return super().train(texts, config)


def test_cache_is_hit_on_the_second_training():
    CountingBPE.trained = 0
    calls = []

    def texts():
        calls.append(1)
        return CORPUS

    def cached(config, fingerprint="data-1"):
        return train_cached(CountingBPE, "bpe", config, texts, fingerprint)

    first = cached(BPEConfig(vocab_size=300))
    second = cached(BPEConfig(vocab_size=300))
    assert CountingBPE.trained == 1 and len(calls) == 1  # texts are not even read again
    assert second.encode_batch(CORPUS[:3]) == first.encode_batch(CORPUS[:3])
    cached(BPEConfig(vocab_size=290))  # another config
    cached(BPEConfig(vocab_size=300), "data-2")  # other texts
    assert CountingBPE.trained == 3
    entries = sorted(p.name for p in cache_root().iterdir() if not p.name.startswith("."))
    assert len(entries) == 3 and all(name.startswith("bpe-") for name in entries)


def test_damaged_cache_entry_is_retrained():
    CountingBPE.trained = 0
    train_cached(CountingBPE, "bpe", BPEConfig(vocab_size=300), lambda: CORPUS, "data")
    [entry] = [p for p in cache_root().iterdir() if not p.name.startswith(".")]
    (entry / "tokenizer.json").write_text("{ not json", encoding="utf-8")
    messages = []
    tokenizer = train_cached(
        CountingBPE, "bpe", BPEConfig(vocab_size=300), lambda: CORPUS, "data", say=messages.append
    )
    assert CountingBPE.trained == 2 and "unreadable" in messages[0]
    assert tokenizer.decode(tokenizer.encode(CORPUS[2])) == CORPUS[2]
    assert BPETokenizer.load(entry / "tokenizer.json").vocab_size == 300  # repaired


@pytest.mark.slow
def test_zoo_run_reuses_the_cached_tokenizer_and_show_reports_it(tiny_text, monkeypatch):
    from zoo.records.store import home

    trained = []
    original = BPETokenizer.train.__func__

    def counting_train(cls, texts, config=None):
        trained.append(config)
        return original(cls, texts, config)

    monkeypatch.setattr(BPETokenizer, "train", classmethod(counting_train))

    def run():
        result = run_cli(
            "run",
            "decoder-bpe",
            tiny_text,
            "--steps",
            2,
            "--json",
            "--set",
            "vocab_size=300",
            "--set",
            "samples=1",
            *TINY_DECODER,
        )
        assert result.code == 0, result
        return json.loads(result.out)

    first = run()
    assert len(trained) == 1
    second = run()
    assert len(trained) == 1  # the second run found the tokenizer in the cache

    saved = [(home() / r["run_id"] / "tokenizer.json").read_text() for r in (first, second)]
    assert saved[0] == saved[1]
    metrics = second["metrics"]
    assert metrics["vocab_size"] == 300 and metrics["chars_per_token"] > 1.5
    shown = run_cli("show", second["run_id"])
    assert shown.code == 0, shown
    assert (
        f"tokenizer bpe: vocabulary 300 tokens, {metrics['chars_per_token']:.3f} "
        "characters per token on validation"
    ) in shown.out


def test_show_reads_the_vocabulary_from_tokenizer_json_when_metrics_lack_it():
    from zoo.api.details import saved_vocab_size
    from zoo.cli.show_text import tokenizer_line
    from zoo.records.store import home

    (home() / "run-1").mkdir(parents=True)
    char().save(home() / "run-1" / "tokenizer.json")
    vocab = saved_vocab_size(home() / "run-1" / "tokenizer.json")
    line = tokenizer_line({"id": "run-1", "tokenizer": "char", "metrics": {}}, vocab)
    assert line == (
        f"  tokenizer char: vocabulary {char().vocab_size} tokens, "
        "characters per token not recorded"
    )


def test_bad_bpe_config_fails_with_exit_2_before_training(tiny_text):
    result = run_cli("run", "decoder-bpe", tiny_text, "--set", "vocab_size=100")
    assert result.code == 2 and "vocab_size must be at least 259" in result.err
    assert not cache_root().exists()


# --- bits per character ------------------------------------------------------------------


class FixedDistribution:
    """A 'model' that predicts the same next-token distribution everywhere."""

    def __init__(self, probs):
        self.logp = np.log(np.asarray(probs, dtype=np.float64))

    def loss_sum(self, inputs, targets, mask=None):
        return float(-self.logp[np.asarray(targets)].sum()), int(np.asarray(targets).size)

    def logits(self, inputs, mask=None):
        inputs = np.asarray(inputs)
        return np.broadcast_to(self.logp, (*inputs.shape, len(self.logp))).copy()


def test_bits_per_character_matches_a_hand_computation():
    from zoo.pipelines.language_modeling import SplitTokens, encode, split_metrics, total_nll

    tokenizer = CharTokenizer.train(["abé"], None)  # <pad> <unk> <cls> a b é
    assert tokenizer.encode("abé") == [3, 4, 5]
    model = FixedDistribution([1 / 24, 1 / 24, 1 / 24, 1 / 2, 1 / 4, 1 / 8])
    text = "abéa"  # 4 characters, 5 UTF-8 bytes
    # a is not predicted (no context); b costs 2 bits, é 3 bits, a 1 bit: 6 bits in all.
    nll, count = total_nll(model, encode(tokenizer, text), block=2, batch=8)
    assert count == 3 and nll == pytest.approx(6 * math.log(2))
    metrics = split_metrics("val", nll, count, SplitTokens.from_text(tokenizer, text))
    assert metrics["val_bpc"] == pytest.approx(6 / 4)
    assert metrics["val_bpb"] == pytest.approx(6 / 5)
    assert metrics["val_loss"] == pytest.approx(2 * math.log(2))  # nats per token
    assert metrics["val_ppl"] == pytest.approx(4.0)


def test_bits_per_character_counts_characters_not_tokens():
    from zoo.pipelines.language_modeling import SplitTokens, encode, split_metrics, total_nll

    tokenizer = BPETokenizer.train(["ab" * 50], BPEConfig(vocab_size=260))  # one merge: "ab"
    ab = tokenizer.token_to_id("ab")
    assert tokenizer.encode("ababab") == [ab, ab, ab]
    probs = np.full(260, (3 / 4) / 259)
    probs[ab] = 1 / 4
    nll, count = total_nll(FixedDistribution(probs), encode(tokenizer, "ababab"), block=4, batch=8)
    # two predicted tokens at 2 bits each, over six characters
    assert count == 2
    assert split_metrics("val", nll, count, SplitTokens.from_text(tokenizer, "ababab"))[
        "val_bpc"
    ] == pytest.approx(4 / 6)


def test_generation_holds_back_a_character_split_across_byte_tokens():
    from zoo.pipelines.language_modeling import Sampling, generate

    tokenizer = BPETokenizer.train(["plain ascii text\n"] * 5, BPEConfig(vocab_size=270))
    script = (
        tokenizer.encode("caf")
        + [tokenizer.token_to_id(b) for b in ("Ã", "©")]
        + tokenizer.encode("!")
    )  # "é" is the bytes C3 A9, byte-level symbols Ã and ©
    assert tokenizer.decode(script) == "café!"

    class Scripted:
        def logits(self, inputs, mask=None):
            out = np.full((1, inputs.shape[1], tokenizer.vocab_size), -1e9)
            out[0, -1, script[inputs.shape[1]]] = 0.0
            return out

    pieces = list(
        generate(Scripted(), tokenizer, "c", len(script) - 1, 64, Sampling(temperature=0))
    )
    assert "".join(pieces) == "afé!"
    assert "\ufffd" not in "".join(pieces)
