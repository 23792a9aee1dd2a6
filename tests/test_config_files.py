"""Config files (`zoo run --config`, `zoo sweep --config`, `zoo show RUN --config`) and
presets that build on others (`base = ...` in registry.toml)."""

import json
import tomllib
from itertools import combinations

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.core.catalogue import BUILTIN_FILE, load_catalogue

TIMING = {"tokens_per_s", "train_time"}
SETTINGS = dict(pair.split("=") for pair in TINY_DECODER[1::2])


def ok(*args):
    result = run_cli(*args)
    assert result.code == 0, result
    return result


def figures(output: str) -> dict:
    return {k: v for k, v in json.loads(output)["metrics"].items() if k not in TIMING}


def settings_table() -> str:
    return (
        "\n".join(f"{k} = {v}" for k, v in SETTINGS.items() if k != "sample_tokens")
        + "\ntrain.sample_tokens = 20\n"
    )


@pytest.mark.slow
def test_run_config_gives_the_metrics_of_the_same_command_line(tiny_text, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(
        f'model = "decoder-char"\ndataset = "{tiny_text}"\nsteps = 3\nseed = 1\n'
        f'device = "cpu"\n[set]\n{settings_table()}',
        encoding="utf-8",
    )
    by_file = ok("run", "--config", config, "--json", "--quiet")
    by_line = ok(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        3,
        "--seed",
        1,
        "--device",
        "cpu",
        *TINY_DECODER,
        "--json",
        "--quiet",
    )
    assert figures(by_file.out) == figures(by_line.out)
    assert json.loads(by_file.out)["seed"] == 1
    # the command line wins over the file: steps, and a --set key
    over = json.loads(
        ok(
            "run", "--config", config, "--steps", 2, "--set", "train.lr=1e-4", "--json", "--quiet"
        ).out
    )
    assert over["metrics"]["steps"] == 2
    from zoo.records.store import Store

    with Store() as store:
        assert store.get(over["run_id"])["config"]["configs"]["train"]["lr"] == 1e-4


def test_show_config_prints_a_file_that_trains_the_run_again(tiny_text, tmp_path):
    first = json.loads(
        ok(
            "run",
            "decoder-char",
            tiny_text,
            "--steps",
            3,
            "--seed",
            2,
            *TINY_DECODER,
            "--set",
            "lr=2e-3",
            "--json",
            "--quiet",
            "--device",
            "cpu",
        ).out
    )
    text = ok("show", first["run_id"], "--config").out
    assert tomllib.loads(text)["set"]["train"]["lr"] == 2e-3
    (tmp_path / "again.toml").write_text(text, encoding="utf-8")
    again = ok("run", "--config", tmp_path / "again.toml", "--json", "--quiet")
    assert figures(again.out) == {k: v for k, v in first["metrics"].items() if k not in TIMING}
    from zoo.records.store import Store

    with Store() as store:  # the same configuration: the same cell of a sweep
        hashes = {
            store.get(run_id)["config_hash"]
            for run_id in (json.loads(again.out)["run_id"], first["run_id"])
        }
    assert len(hashes) == 1


def test_sweep_config_gives_the_metrics_of_the_same_command_line(tiny_text, tmp_path):
    config = tmp_path / "sweep.toml"
    config.write_text(
        f'models = ["decoder-char"]\non = ["{tiny_text}"]\nsteps = 2\nseeds = 1\n'
        f"[grid]\nlr = [1e-3, 3e-3]\n[set]\n{settings_table()}",
        encoding="utf-8",
    )
    by_file = json.loads(ok("sweep", "--config", config, "--json").out)
    assert sorted(c["setting"]["lr"] for c in by_file["cells"]) == [0.001, 0.003]
    assert {c["state"] for c in by_file["cells"]} == {"finished"}
    by_line = json.loads(
        ok(
            "sweep",
            "decoder-char",
            "--on",
            tiny_text,
            "--steps",
            2,
            "--grid",
            "lr=1e-3,3e-3",
            *TINY_DECODER,
            "--json",
        ).out
    )
    # the same cells: the command line finds them finished by the file's sweep
    assert {c["state"] for c in by_line["cells"]} == {"reused"}
    assert sorted(c["mean"] for c in by_line["comparison"]) == sorted(
        c["mean"] for c in by_file["comparison"]
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ('modle = "decoder-char"\n', "Did you mean: model"),
        ('model = "decoder-char"\ndataset = "x"\nsteps = "many"\n', "steps"),
        ('model = "decoder-char"\ndataset = "x"\ndevice = "tpu"\n', "device"),
        ("model = [\n", "malformed TOML"),
    ],
)
def test_a_bad_config_file_is_exit_2_before_training(tmp_path, text, message):
    config = tmp_path / "bad.toml"
    config.write_text(text, encoding="utf-8")
    result = run_cli("run", "--config", config)
    assert result.code == 2 and message in result.err, result
    assert "Did you mean: grid" in run_cli("sweep", "--config", _file(tmp_path, "gird = {}\n")).err


def _file(folder, text):
    path = folder / "c.toml"
    path.write_text(text, encoding="utf-8")
    return path


# -- presets that build on others ------------------------------------------------------
def test_a_preset_builds_on_its_bases_and_a_users_file_may_build_on_builtins(tmp_path, monkeypatch):
    (tmp_path / "registry.toml").write_text(
        '[models.deep-char]\nbase = "decoder-char"\n[models.deep-char.set]\nn_layer = 4\n'
        '[models.deep-bpe]\nbase = ["deep-char", "bpe-512"]\n'
        '[models.own-words]\nbase = ["deep-char", "bpe-512"]\ndescription = "my words"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    catalogue = load_catalogue()
    deep = catalogue.models["deep-bpe"]
    decoder = catalogue.models["decoder-char"]
    assert (deep.architecture, deep.tokenizer) == ("decoder", "bpe")
    assert deep.overrides == {
        **decoder.overrides,
        "n_layer": 4,
        "vocab_size": 512,
        "min_frequency": 2,
    }
    assert "gpt-small" in catalogue.templates and "gpt-small" not in catalogue.models
    # a description is the preset's own, never a base's (the tokenizer template's, say)
    assert catalogue.models["own-words"].description == "my words"
    assert deep.description == "built on deep-char + bpe-512"
    assert catalogue.models["deep-char"].description == "built on decoder-char"
    result = run_cli("run", "gpt-small", "shakespeare")
    assert result.code == 2 and "template" in result.err


@pytest.mark.parametrize(
    "text, message",
    [
        ('[models.a-char]\nbase = "decodr-char"\n', "Did you mean: decoder-char"),
        ('[models.a]\nbase = "b"\n[models.b]\nbase = "a"\n', "cycle"),
    ],
)
def test_a_bad_base_is_one_clear_error(tmp_path, monkeypatch, text, message):
    (tmp_path / "registry.toml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run_cli("list", "models")
    assert result.code == 2 and message in result.err, result


def ancestors(models: dict, name: str) -> set[str]:
    found = set()
    for base in (
        [models[name]["base"]]
        if isinstance(models[name].get("base"), str)
        else models[name].get("base", [])
    ):
        found |= {base} | ancestors(models, base)
    return found


def test_the_builtin_presets_say_each_value_once():
    """No preset repeats a value its bases give it, and no two related presets (one builds
    on the other, or both on a common preset) write the same key = value."""
    models = tomllib.loads(BUILTIN_FILE.read_text(encoding="utf-8"))["models"]
    resolved = load_catalogue([])
    every = {**resolved.models, **resolved.templates}
    for name, body in models.items():
        inherited = {}
        bases = [body["base"]] if isinstance(body.get("base"), str) else body.get("base", [])
        for base in bases:
            inherited.update(every[base].overrides)
        repeated = {k for k, v in body.get("set", {}).items() if inherited.get(k) == v}
        assert not repeated, f"{name} repeats {repeated} from {bases}"
    for a, b in combinations(models, 2):
        family_a, family_b = ancestors(models, a) | {a}, ancestors(models, b) | {b}
        if not family_a & family_b:
            continue
        own_a, own_b = models[a].get("set", {}), models[b].get("set", {})
        shared = {k for k in own_a if k in own_b and own_a[k] == own_b[k]}
        assert not shared, f"{a} and {b} both write {shared}"
    lines = [line.split("#")[0].strip() for line in BUILTIN_FILE.read_text("utf-8").splitlines()]
    assert lines.count("steps = 500") == 1 and lines.count("lr = 5e-3") == 1


def test_a_yaml_config_file_reads_as_toml_does(tmp_path):
    from zoo.cli.config_file import read

    path = tmp_path / "run.yaml"
    path.write_text(
        "model: decoder-char\ndataset: shakespeare\nsteps: 3\nset:\n  train:\n"
        "    lr: 0.002\n  n_layer: 1\n",
        encoding="utf-8",
    )
    assert read(path, "run") == {
        "model": "decoder-char",
        "dataset": "shakespeare",
        "steps": 3,
        "set": {"train.lr": 0.002, "n_layer": 1},
    }
