"""Bad input, everywhere: every case ends in exit code 2 and one readable line naming the
problem and what would be valid, with no traceback, and nothing in the store but a failed
row where a run had started. Property-based tests cover registry.toml and --set parsing."""

from __future__ import annotations

import json
import math
import string
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import TINY_DECODER, run_cli
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from zoo.core import loading
from zoo.records.store import Store

GOOD = [f"line {i}: the quick brown fox jumps over the lazy dog." for i in range(60)]
TINY = [*TINY_DECODER, "--set", "sample_tokens=5"]


@dataclass
class Case:
    id: str
    args: list
    expect: tuple  # substrings of the one error line: the problem, and what is valid
    setup: Callable[[Path], dict | None] | None = None  # makes files; may return env vars
    started: bool = False  # the run had started: one 'failed' row is expected


# -- set-ups -------------------------------------------------------------------------
def write(name: str, content: str | bytes):
    def setup(work: Path):
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)

    return setup


def both(*setups):
    def setup(work: Path):
        env = {}
        for s in setups:
            env.update(s(work) or {})
        return env

    return setup


tiny = write("tiny.txt", "\n".join(GOOD) + "\n")


def registry_toml(text: str):
    return write("registry.toml", textwrap.dedent(text))


def plugin(stem: str, body: str, strict: bool = True):
    """A local plugin module named in registry.toml (strict: a broken plugin is an error)."""

    def setup(work: Path):
        source = "from zoo.hookspecs import hookimpl\n" + textwrap.dedent(body)
        (work / f"{stem}.py").write_text(source)
        (work / "registry.toml").write_text(f'[plugins]\nmodules = ["{stem}.py"]\n')
        return {"ZOO_LOAD_PLUGINS": stem, **({"ZOO_STRICT_PLUGINS": "1"} if strict else {})}

    return setup


def rows(*specs):
    """Store rows, as (id, status) pairs, that exist before the command."""

    def setup(work: Path):
        with Store() as store:
            for run_id, status in specs:
                store.insert(run_id, model="decoder-char", status=status, pid=1, host="elsewhere")

    return setup


RUN = ["run", "decoder-char"]
CASES = [
    # -- the command line --------------------------------------------------------------
    Case("unknown-command", ["rn"], ("invalid choice", "Did you mean: run")),
    Case("run-without-dataset", ["run", "decoder-char"], ("required", "dataset")),
    Case(
        "unknown-model",
        [*RUN[:1], "decoder-chr", "tiny.txt"],
        ("Unknown model", "decoder-char"),
        tiny,
    ),
    Case("unknown-dataset", [*RUN, "shakspeare"], ("Unknown dataset", "shakespeare")),
    Case("missing-dataset-path", [*RUN, "./nope.txt"], ("does not exist",)),
    Case(
        "unreadable-format",
        [*RUN, "data.xyz"],
        ("expected a folder or", "csv"),
        write("data.xyz", "a"),
    ),
    Case("zero-steps", [*RUN, "tiny.txt", "--steps", "0"], ("--steps", "positive integer"), tiny),
    Case(
        "words-for-steps", [*RUN, "tiny.txt", "--steps", "ten"], ("positive integer", "'ten'"), tiny
    ),
    Case("negative-time", [*RUN, "tiny.txt", "--time", "-5"], ("--time", "positive number"), tiny),
    Case(
        "steps-and-time",
        [*RUN, "tiny.txt", "--steps", "1", "--time", "1"],
        ("not allowed with",),
        tiny,
    ),
    Case(
        "unknown-device", [*RUN, "tiny.txt", "--device", "tpu"], ("invalid choice", "'tpu'"), tiny
    ),
    Case(
        "predict-unknown-device",
        ["predict", "x", "a film", "--device", "gpu"],
        ("invalid choice", "Did you mean: cpu"),
    ),
    Case(
        "unserved-task",
        [*RUN, "tiny.txt", "--task", "translation"],
        ("translation", "serves"),
        tiny,
    ),
    Case("seed-not-a-number", [*RUN, "tiny.txt", "--seed", "abc"], ("--seed", "invalid int")),
    Case(
        "unknown-text-column",
        [*RUN, "tiny.txt", "--text-column", "body"],
        ("Unknown text column", "text"),
        tiny,
    ),
    Case("unknown-list-kind", ["list", "gadgets"], ("invalid choice", "architectures")),
    Case("zero-tokens", ["generate", "x", "--tokens", "0"], ("--tokens", "positive integer")),
    Case("predict-without-text", ["predict", "x"], ("either TEXT or --file",)),
    Case(
        "predict-missing-file",
        ["predict", "x", "--file", "nope.txt"],
        ("cannot read --file", "nope.txt"),
    ),
    Case(
        "predict-blank-file",
        ["predict", "x", "--file", "blank.txt"],
        ("blank.txt has no texts", "one text per line"),
        write("blank.txt", "\n  \n\t\n"),
    ),
    Case(
        "seed-negative",
        [*RUN, "tiny.txt", "--seed", "-5"],
        ("--seed", "from 0 to 4294967295", "-5"),
        tiny,
    ),
    Case(
        "seed-too-big-for-sqlite",
        [*RUN, "tiny.txt", "--seed", "18446744073709551616"],
        ("--seed", "from 0 to"),
        tiny,
    ),
    Case("generate-seed-negative", ["generate", "x", "--seed", "-1"], ("--seed", "from 0 to")),
    Case(
        "temperature-negative",
        ["generate", "x", "--temperature", "-1"],
        ("--temperature", "0 (greedy) or a positive"),
    ),
    Case("temperature-nan", ["generate", "x", "--temperature", "nan"], ("--temperature", "'nan'")),
    Case("temperature-inf", ["generate", "x", "--temperature", "inf"], ("--temperature", "'inf'")),
    Case(
        "zoo-cache-is-a-file",
        ["run", "decoder-bpe", "tiny.txt", "--steps", "1", "--quiet", *TINY],
        ("ZOO_CACHE=", "is not a folder"),
        both(tiny, lambda work: {"ZOO_CACHE": str(work / "tiny.txt")}),
        started=True,
    ),
    # -- --set values ------------------------------------------------------------------
    Case(
        "set-without-equals",
        [*RUN, "tiny.txt", "--set", "n_layer"],
        ("key=value", "'n_layer'"),
        tiny,
    ),
    Case(
        "set-unknown-key",
        [*RUN, "tiny.txt", "--set", "nlayer=2"],
        ("Unknown config key", "n_layer"),
        tiny,
    ),
    Case(
        "set-unknown-section",
        [*RUN, "tiny.txt", "--set", "optim.lr=1"],
        ("config section", "train"),
        tiny,
    ),
    Case(
        "set-words-for-int",
        [*RUN, "tiny.txt", "--set", "n_layer=two"],
        ("n_layer must be an integer", "'two'"),
        tiny,
    ),
    Case(
        "set-fraction-for-int",
        [*RUN, "tiny.txt", "--set", "n_layer=1.5"],
        ("n_layer must be an integer",),
        tiny,
    ),
    Case(
        "set-empty-value",
        [*RUN, "tiny.txt", "--set", "n_layer="],
        ("n_layer must be an integer", "''"),
        tiny,
    ),
    Case("set-negative-lr", [*RUN, "tiny.txt", "--set", "lr=-1"], ("lr must be positive",), tiny),
    Case(
        "set-infinite-lr",
        [*RUN, "tiny.txt", "--set", "lr=inf"],
        ("lr must be a finite number", "'inf'"),
        tiny,
    ),
    Case(
        "set-nan-lr", [*RUN, "tiny.txt", "--set", "lr=nan"], ("lr must be a finite number",), tiny
    ),
    Case(
        "set-maybe-bool",
        [*RUN, "tiny.txt", "--set", "bias=maybe"],
        ("bias must be true or false", "'maybe'"),
        tiny,
    ),
    Case(
        "set-heads-not-dividing",
        [*RUN, "tiny.txt", *TINY, "--set", "n_head=5"],
        ("divisible by n_head",),
        tiny,
    ),
    Case(
        "set-zero-eval-interval",
        [*RUN, "tiny.txt", "--set", "eval_interval=0"],
        ("eval_interval must be positive",),
        tiny,
    ),
    Case(
        "set-dropout-one",
        [*RUN, "tiny.txt", "--set", "dropout=1"],
        ("dropout must be in [0, 1)",),
        tiny,
    ),
    Case(
        "set-min-lr-above-lr",
        [*RUN, "tiny.txt", "--set", "lr=1e-3", "--set", "min_lr=1e-2"],
        ("min_lr (0.01) is above lr (0.001)",),
        tiny,
    ),
    Case(
        "set-vocabulary-too-big",
        ["run", "decoder-bpe", "tiny.txt", "--set", "vocab_size=1000000000"],
        ("vocab_size = 1,000,000,000", "at most 1,048,576"),
        tiny,
    ),
    Case(
        "set-negative-checkpoint",
        [*RUN, "tiny.txt", "--set", "checkpoint_every=-1"],
        ("checkpoint_every must be zero or more",),
        tiny,
    ),
    Case(
        "set-block-longer-than-data",
        [*RUN, "tiny.txt", "--steps", "1", "--quiet", *TINY, "--set", "block_size=60000"],
        ("needs more than", "the context length + 1 = 60001"),
        tiny,
        started=True,
    ),
    # -- registry.toml -----------------------------------------------------------------
    Case(
        "toml-malformed",
        ["list"],
        ("registry.toml", "malformed TOML"),
        registry_toml("[datasets.x\n"),
    ),
    Case(
        "toml-not-utf8",
        ["list"],
        ("registry.toml", "not UTF-8"),
        write("registry.toml", b"[models.caf\xe9]\n"),
    ),
    Case(
        "toml-unknown-top-key",
        ["list"],
        ("unknown key 'colour'", "Valid keys"),
        registry_toml("colour = 1\n"),
    ),
    Case(
        "toml-two-sources",
        ["list"],
        ("exactly one of hub, path or plugin", "line 1"),
        registry_toml('[datasets.x]\nhub = "a/b"\npath = "c"\n'),
    ),
    Case(
        "toml-preset-without-architecture",
        ["list"],
        ("needs 'architecture'",),
        registry_toml('[models.m]\ntokenizer = "char"\n'),
    ),
    Case(
        "toml-mirrors-not-a-list",
        ["list"],
        ("mirrors must be a list", "not str"),
        registry_toml('mirrors = "x"\n'),
    ),
    Case(
        "toml-split-not-a-string",
        ["list"],
        ("splits.train must be a string", "not int"),
        registry_toml('[datasets.x]\npath = "a"\nsplits = { train = 5 }\n'),
    ),
    Case(
        "toml-preset-bad-value",
        ["run", "m", "tiny.txt"],
        ("n_layer must be an integer", "'two'"),
        both(
            tiny,
            registry_toml(
                '[models.m]\narchitecture = "decoder"\ntokenizer = "char"\nset = { n_layer = "two" }\n'
            ),
        ),
    ),
    Case(
        "toml-preset-infinite-lr",
        ["run", "m", "tiny.txt"],
        ("lr must be a finite number",),
        both(
            tiny,
            registry_toml(
                '[models.m]\narchitecture = "decoder"\ntokenizer = "char"\nset = { lr = inf }\n'
            ),
        ),
    ),
    Case(
        "toml-nested-too-deeply",
        ["list"],
        ("registry.toml", "nested too deeply"),
        registry_toml("a = " + "[" * 100_000 + "]" * 100_000 + "\n"),
    ),
    Case(
        "toml-hub-climbs-out",
        ["list"],
        ("hub '../../etc' is not a Hub dataset id", "no '..'"),
        registry_toml('[datasets.evil]\nhub = "../../etc"\n'),
    ),
    Case(
        "toml-registry-env-missing",
        ["list"],
        ("ZOO_REGISTRY", "not a file"),
        lambda work: {"ZOO_REGISTRY": str(work / "missing.toml")},
    ),
    # -- datasets ----------------------------------------------------------------------
    Case(
        "dataset-empty-split",
        [*RUN, "./split"],
        ("has no rows", "every split"),
        both(
            write("split/train.csv", "text\n" + "\n".join(GOOD)),
            write("split/validation.csv", "text\n"),
            write("split/test.csv", "text\n" + "\n".join(GOOD)),
        ),
    ),
    Case(
        "dataset-not-utf8",
        [*RUN, "latin1.txt"],
        ("not UTF-8", "save it as UTF-8"),
        write("latin1.txt", ("\n".join(GOOD) + "\ncaf\xe9\n").encode("latin-1")),
    ),
    Case(
        "dataset-none-in-text",
        [*RUN, "none.csv"],
        ("empty (None) rows", "every row needs text"),
        write("none.csv", "text,n\n" + "\n".join(f"{g},1" for g in GOOD) + "\n,0\n"),
    ),
    Case(
        "dataset-string-labels-unseen-in-training",
        [*RUN, "./labelled"],
        ("split 'test'", "labels the training split never has: maybe", "training has: neg, pos"),
        both(
            *(
                write(
                    f"labelled/{split}.csv",
                    "text,label\n"
                    + "\n".join(f"{g},{'pos' if i % 2 else 'neg'}" for i, g in enumerate(GOOD))
                    + extra,
                )
                for split, extra in (
                    ("train", ""),
                    ("validation", ""),
                    ("test", "\nwho knows,maybe"),
                )
            )
        ),
    ),
    Case(
        "dataset-float-labels",
        ["run", "decoder-char", "scores"],
        ("holds float64 values", "class names (text), integer class ids"),
        both(
            write(
                "scores.csv",
                "text,label\n" + "\n".join(f"{g},{i / 7:.3f}" for i, g in enumerate(GOOD)),
            ),
            registry_toml('[datasets.scores]\npath = "scores.csv"\ntask = "classification"\n'),
        ),
    ),
    Case(
        "dataset-one-huge-line",
        [*RUN, "huge.txt"],
        ("only 1 rows", "need at least 20"),
        write("huge.txt", "x" * 5_000_000 + "\n"),
    ),
    Case(
        "dataset-missing-split",
        ["run", "decoder-char", "named"],
        ("Unknown split 'dev'", "splits maps validation"),
        both(
            tiny,
            registry_toml('[datasets.named]\npath = "tiny.txt"\nsplits = { validation = "dev" }\n'),
        ),
    ),
    Case(
        "dataset-no-train-split",
        [*RUN, "./notrain"],
        ("Unknown split 'train'", "has: validation"),
        both(
            write("notrain/validation.csv", "text\n" + "\n".join(GOOD)),
            write("notrain/test.csv", "text\n" + "\n".join(GOOD)),
        ),
    ),
    Case(
        "dataset-numbers-as-text",
        [*RUN, "numbers.csv"],
        ("holds int64 values, not text", "(text_column)"),
        write("numbers.csv", "text\n" + "\n".join(str(i) for i in range(60))),
    ),
    Case(
        "dataset-id-climbs-out", [*RUN, "a/../../etc"], ("neither an existing path nor a Hub id",)
    ),
    Case("dataset-empty-file", [*RUN, "empty.txt"], ("no rows",), write("empty.txt", "")),
    # -- run ids -----------------------------------------------------------------------
    Case("run-id-unknown", ["generate", "nope"], ("Unknown run 'nope'", "zoo runs")),
    Case("run-id-empty", ["generate", ""], ("run id cannot be empty", "zoo runs")),
    Case("run-id-path", ["generate", "../../etc/passwd"], ("Unknown run", "zoo runs")),
    Case(
        "run-id-ambiguous",
        ["generate", "2026"],
        ("ambiguous", "2026-a, 2026-b"),
        rows(("2026-a", "finished"), ("2026-b", "finished")),
    ),
    Case(
        "run-id-failed-run",
        ["generate", "2026-f"],
        ("run 2026-f has no config.json",),
        rows(("2026-f", "failed")),
    ),
    Case(
        "resume-finished-run",
        ["resume", "2026-a"],
        ("already finished", "nothing to resume"),
        rows(("2026-a", "finished")),
    ),
    Case(
        "resume-diverged-run",
        ["resume", "2026-d"],
        ("diverged", "lower learning rate"),
        rows(("2026-d", "diverged")),
    ),
    Case(
        "resume-without-config",
        ["resume", "2026-i"],
        ("has no config.json",),
        rows(("2026-i", "interrupted")),
    ),
    # -- plugins that register garbage ---------------------------------------------------
    Case(
        "plugin-not-a-class",
        ["list"],
        ("junk", "not a subclass of zoo.plugin.Tokenizer"),
        plugin(
            "p_notclass",
            "@hookimpl\ndef register_tokenizers(register):\n    register('junk', 42)\n",
        ),
    ),
    Case(
        "plugin-function-as-tokenizer",
        ["list"],
        ("not a subclass of zoo.plugin.Tokenizer",),
        plugin(
            "p_func", "@hookimpl\ndef register_tokenizers(register):\n    register('junk', len)\n"
        ),
    ),
    Case(
        "plugin-wrong-build-signature",
        ["list"],
        ("must be build(config, spec)", "(config)"),
        plugin(
            "p_sig",
            "@hookimpl\ndef register_architectures(register):\n"
            "    register('junk', lambda config: None)\n",
        ),
    ),
    Case(
        "plugin-wrong-signature-lazy",
        ["run", "junk-char", "tiny.txt"],
        ("must be build(config, spec)", "junk"),
        both(
            tiny,
            plugin(
                "p_lazy",
                "def build(config):\n    pass\n@hookimpl\ndef register_architectures(register):\n"
                "    register('junk', 'zoo_local_plugin_p_lazy:build', tasks=('language-modeling',),\n"
                "             config='zoo.plugins.decoder:DecoderConfig')\n",
                strict=False,
            ),
        ),
    ),
    Case(
        "plugin-wrong-hook-signature",
        ["list"],
        ("p_hook", "extra"),
        plugin("p_hook", "@hookimpl\ndef register_architectures(register, extra):\n    pass\n"),
    ),
    Case(
        "plugin-misspelled-hook",
        ["list"],
        ("p_typo", "register_architecture"),
        plugin("p_typo", "@hookimpl\ndef register_architecture(register):\n    pass\n"),
    ),
    Case(
        "plugin-duplicate-name",
        ["list"],
        ("'decoder'", "clashes"),
        plugin(
            "p_dup",
            "@hookimpl\ndef register_architectures(register):\n"
            "    register('decoder', 'zoo.plugins.decoder.model:build')\n",
        ),
    ),
    Case(
        "plugin-registers-twice",
        ["list"],
        ("registered twice",),
        plugin(
            "p_twice",
            "@hookimpl\ndef register_architectures(register):\n"
            "    register('junk', 'm:a')\n    register('junk', 'm:b')\n",
        ),
    ),
    Case(
        "plugin-tasks-as-string",
        ["list"],
        ("tasks must be a list of task names",),
        plugin(
            "p_tasks",
            "@hookimpl\ndef register_architectures(register):\n"
            "    register('junk', 'm:a', tasks='language-modeling')\n",
        ),
    ),
    Case(
        "plugin-config-not-dataclass",
        ["list"],
        ("config must be a dataclass",),
        plugin(
            "p_cfg",
            "@hookimpl\ndef register_architectures(register):\n    register('junk', 'm:a', config=42)\n",
        ),
    ),
    Case(
        "plugin-import-error",
        ["list"],
        ("p_import", "No module named"),
        plugin("p_import", "import no_such_module_anywhere\n"),
    ),
]


def test_the_table_is_big_enough():
    """The real count, pinned: a case dropped by accident fails here (add one: raise it)."""
    assert len(CASES) == 86 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_exits_2_with_one_line(case, isolated, monkeypatch):
    env = (case.setup(isolated) if case.setup else None) or {}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    loading.reset_zoo()
    with Store() as store:
        before = {r["id"] for r in store.rows()}
    result = run_cli(*case.args)
    assert result.code == 2, result
    assert result.out == "", result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zoo: error: "), result.err
    assert "Traceback" not in result.err
    assert " object at 0x" not in result.err  # no object repr in an error line
    for needle in case.expect:
        assert needle in lines[0], (needle, lines[0])
    with Store() as store:
        new = [r for r in store.rows() if r["id"] not in before]
    assert [r["status"] for r in new] == (["failed"] if case.started else []), new


def test_a_broken_plugin_is_set_aside_without_strict(isolated, monkeypatch):
    env = plugin(
        "p_notclass",
        "@hookimpl\ndef register_tokenizers(register):\n    register('junk', 42)\n",
        strict=False,
    )(isolated)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = run_cli("list", "tokenizers")
    assert result.code == 0 and "char" in result.out
    assert "p_notclass" in result.err and "set aside" in result.err
    assert len(result.err.strip().splitlines()) == 1


# -- property-based: --set parsing ---------------------------------------------------
def sections():
    from zoo.pipelines.language_modeling import LanguageModelingConfig
    from zoo.plugins.char import CharConfig
    from zoo.plugins.decoder import DecoderConfig

    return {"model": DecoderConfig, "tokenizer": CharConfig, "train": LanguageModelingConfig}


KEYS = [
    "n_layer",
    "n_head",
    "n_embd",
    "block_size",
    "dropout",
    "bias",
    "lr",
    "steps",
    "time",
    "lowercase",
    "top_k",
    "train.lr",
    "model.n_layer",
    "warmup_steps",
    "nope",
    "a.b.c",
]
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
values = st.one_of(
    texts,
    st.integers().map(str),
    st.floats(allow_nan=True).map(repr),
    st.sampled_from(["true", "no", "none", "1e3", "-0", "  7 ", "0x10", "1_000"]),
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(texts, st.builds(lambda k, v: f"{k}={v}", st.sampled_from(KEYS) | texts, values)))
def test_set_parsing_never_crashes(text):
    from zoo.core.config import build_config, parse_assignment, split_overrides
    from zoo.errors import ZooError

    try:
        key, value = parse_assignment(text)
    except ZooError as exc:
        assert "key=value" in str(exc)
        return
    assert key == key.strip() and key and text.partition("=")[0].strip() == key
    try:
        found = split_overrides({key: value}, sections())
        configs = {name: build_config(cls, found[name]) for name, cls in sections().items()}
    except ZooError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    (section,) = [s for s, v in found.items() if v]
    ((name, parsed),) = found[section].items()
    assert getattr(configs[section], name) == parsed
    assert not isinstance(parsed, float) or math.isfinite(parsed)


@given(st.integers(min_value=1, max_value=10**30))
def test_set_integers_round_trip(number):
    from zoo.core.config import split_overrides

    assert split_overrides({"steps": str(number)}, sections())["train"]["steps"] == number


@given(st.floats(min_value=1e-300, max_value=1e300))
def test_set_floats_round_trip(number):
    from zoo.core.config import split_overrides

    assert split_overrides({"lr": repr(number)}, sections())["train"]["lr"] == number


# -- property-based: registry.toml ---------------------------------------------------
def toml_key():
    return st.one_of(
        st.sampled_from(
            [
                "hub",
                "path",
                "plugin",
                "task",
                "text_column",
                "splits",
                "description",
                "config",
                "architecture",
                "tokenizer",
                "set",
                "modules",
                "train",
                "validation",
                "n_layer",
                "lr",
            ]
        ),
        st.text(alphabet=string.ascii_letters + "_-", min_size=1, max_size=8),
    )


scalars = st.one_of(st.text(max_size=10), st.integers(), st.floats(allow_nan=True), st.booleans())
toml_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(toml_key(), inner, max_size=4)
    ),
    max_leaves=12,
)
awkward_text = st.text(alphabet=st.sampled_from(list('ab/._-\x00\n\\"é🦊 ')), max_size=8)
bodies = st.dictionaries(toml_key(), st.one_of(awkward_text, toml_values), max_size=6)
documents = st.dictionaries(
    st.sampled_from(["mirrors", "datasets", "models", "plugins", "other"]),
    st.one_of(
        toml_values,
        st.lists(awkward_text, max_size=3),
        st.dictionaries(toml_key(), bodies, max_size=3),
    ),
    max_size=4,
)


def to_toml(data: dict) -> str:
    """A small TOML writer for generated documents: everything as inline values."""

    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return (
                "nan"
                if math.isnan(v)
                else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
            )
        if isinstance(v, int):
            return str(v)
        if isinstance(v, str):
            return json.dumps(v, ensure_ascii=False)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return (
            "{"
            + ", ".join(f"{json.dumps(k, ensure_ascii=False)} = {value(x)}" for k, x in v.items())
            + "}"
        )

    return "".join(f"{json.dumps(k, ensure_ascii=False)} = {value(v)}\n" for k, v in data.items())


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(documents)
@example({"datasets": {"x": {"path": "a\x00b"}}})
@example({"mirrors": ["\x00"]})
@example(
    {"models": {"m": {"architecture": "decoder", "tokenizer": "char", "set": {"lr": math.inf}}}}
)
def test_registry_toml_documents_load_or_fail_with_one_line(tmp_path, document):
    from zoo.core.catalogue import Catalogue, merge_file
    from zoo.errors import ZooError

    path = tmp_path / "registry.toml"
    path.write_text(to_toml(document), encoding="utf-8")
    catalogue = Catalogue()
    try:
        merge_file(catalogue, path)
    except ZooError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    for entry in catalogue.datasets.values():
        assert sum(x is not None for x in (entry.hub, entry.path, entry.plugin)) == 1
        assert all(isinstance(v, str) for v in entry.splits.values())
    for preset in catalogue.models.values():
        assert isinstance(preset.architecture, str) and isinstance(preset.tokenizer, str)
        assert isinstance(preset.overrides, dict) and isinstance(preset.description, str)


@pytest.mark.slow
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)))
def test_registry_toml_of_any_bytes_loads_or_fails_with_one_line(tmp_path, data):
    from zoo.core.catalogue import Catalogue, merge_file
    from zoo.errors import ZooError

    path = tmp_path / "registry.toml"
    path.write_bytes(data)
    try:
        merge_file(Catalogue(), path)
    except ZooError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)


def test_a_precision_the_device_lacks_is_refused_before_a_run_is_recorded(tiny_text):
    from zoo.records.store import Store

    result = run_cli("run", "decoder-char", tiny_text, "--steps", 2, "--set", "precision=fp16")
    assert result.code == 2 and "precision fp16 needs a CUDA device" in result.err, result
    with Store() as store:
        assert store.rows() == []
