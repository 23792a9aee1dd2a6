"""Faults: kill-and-resume bit-exactness, interrupted checkpoint writes, resume refusals,
read-only and full runs folders, safe loading, divergence, and the results store."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import pickle
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, TINY_ANY, TINY_DECODER, press_ctrl_c, run_cli, seed_sweep

from zoo.records.store import MIGRATIONS, SCHEMA_VERSION, Store, home
from zoo.train import checkpoints as checkpoint

TIMING = {"train_time", "tokens_per_s", "elapsed"}  # the only figures allowed to differ


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest


# TINY_DECODER without the language-modeling-only setting, for any task


def run_args(dataset, steps=12, seed=1, *extra, model="decoder-char", tiny=TINY_DECODER):
    return [
        "run",
        model,
        dataset,
        "--steps",
        steps,
        "--seed",
        seed,
        "--json",
        *tiny,
        "--set",
        "checkpoint_every=1",
        "--set",
        "dropout=0.1",
        *extra,
    ]


def curve(run_dir: Path) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]


def reference_run(dataset, steps=12, **options) -> dict:
    """An uninterrupted run: its --json summary plus the folder it was saved in."""
    result = run_cli(*run_args(dataset, steps, **options))
    assert result.code == 0, result
    summary = json.loads(result.out)
    return summary | {"run_dir": str(home() / summary["run_id"])}


def assert_same_run(done: dict, reference: dict):
    """Weights byte-identical; every metric and the training curve equal but for timing."""
    a, b = home() / done["run_id"], Path(reference["run_dir"])
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    for key, value in reference["metrics"].items():
        if key not in TIMING:
            assert done["metrics"][key] == value, key
    assert curve(a) == curve(b)
    for name in ("samples.txt", "classes.json"):
        assert (a / name).exists() == (b / name).exists()
        if (b / name).exists():
            assert (a / name).read_text() == (b / name).read_text()


@contextlib.contextmanager
def steps_trained(monkeypatch):
    """The steps the training loop runs while the block runs (each logs a train_loss)."""
    from zoo.train.job import RunFolder

    steps, original = [], RunFolder.log

    def log(self, record):
        if "train_loss" in record:
            steps.append(record["step"])
        original(self, record)

    with monkeypatch.context() as patch:
        patch.setattr(RunFolder, "log", log)
        yield steps


def resume_continues(monkeypatch, run_id: str, steps: int, *options):
    """`zoo resume RUN_ID`, checked to continue from its checkpoint (step N > 0) and to
    train only steps N+1..steps: a resume that started over would train them all."""
    ckpt = checkpoint.latest(home() / run_id)
    assert ckpt is not None and ckpt.step > 0, "nothing to continue from"
    with steps_trained(monkeypatch) as trained:
        result = run_cli("resume", run_id, *options)
    assert result.code == 0, result
    assert trained == list(range(ckpt.step + 1, steps + 1)), (ckpt.step, trained)
    if "--json" not in options and "--quiet" not in options:
        assert f"resuming run {run_id} from step {ckpt.step}" in result.err, result.err
    return result


def run_folders(home_dir: Path) -> list[str]:
    """The ids of the run folders under a ZOO_HOME (it also holds caches)."""
    return [p.name for p in home_dir.iterdir() if (p / "config.json").is_file()]


def interrupted_run(monkeypatch, dataset, stop_after: int, *extra, steps=12, **options):
    """A run stopped by Ctrl-C right after its checkpoint at ``stop_after``."""
    original = checkpoint.Checkpointer.save

    def save_then_stop(self, elapsed):
        original(self, elapsed)
        if self.result.steps >= stop_after:
            press_ctrl_c()

    with monkeypatch.context() as patch:
        patch.setattr(checkpoint.Checkpointer, "save", save_then_stop)
        result = run_cli(*run_args(dataset, steps, 1, *extra, **options))
    assert result.code == 130, result
    (run_id,) = run_folders(home())
    return run_id


# -- checkpoints and resume ----------------------------------------------------------
class Trial:
    """`python -m zoo ARGS` in its own ZOO_HOME, to be killed with SIGKILL once the run's
    training curve has ``kill_at`` lines."""

    def __init__(self, home_dir: Path, args: list, kill_at: int):
        self.home, self.kill_at, self.killed = home_dir, kill_at, False
        env = {**os.environ, "ZOO_HOME": str(home_dir)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "zoo", *map(str, args), "--quiet"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def lines(self) -> int:
        logs = list(self.home.glob("*/metrics.jsonl"))
        return logs[0].read_bytes().count(b"\n") if logs else 0

    def poll(self) -> bool:
        """Kill when due; True while the process still has to be watched."""
        if not self.killed and self.lines() >= self.kill_at:
            self.proc.send_signal(signal.SIGKILL)
            self.killed = True
        return not self.killed and self.proc.poll() is None

    def check_killed(self):
        code = self.proc.wait()
        assert self.killed and code == -signal.SIGKILL, (
            self.kill_at,
            code,
            self.proc.stderr.read()[-800:],
        )
        (run_id,) = run_folders(self.home)
        return run_id


def watch(trials, seconds=300):
    deadline = time.monotonic() + seconds
    while any([t.poll() for t in trials]):
        assert time.monotonic() < deadline, "the runs never reached their kill steps"
        time.sleep(0.002)


def kill_points(count: int) -> random.Random:
    """A seeded generator for kill points (ZOO_KILL_SEED repeats a run's choice); the seed is
    printed, so a failure says how to replay it."""
    seed = int(os.environ.get("ZOO_KILL_SEED", time.time_ns() % 1_000_000))
    print(f"kill points drawn with ZOO_KILL_SEED={seed}")
    return random.Random(seed)


@pytest.mark.slow
def test_sigkill_at_random_steps_then_resume_is_bit_identical(tiny_text, monkeypatch):
    """SIGKILL at random steps, three times: two runs killed (side by side, to share the
    start-up time), one of them killed again while it resumes; then both resumed to the
    end. Weights, metrics and curve equal the uninterrupted run's."""
    steps = 40
    reference = reference_run(tiny_text, steps)
    rng = kill_points(3)
    args = run_args(tiny_text, steps)
    trials = [
        Trial(home().parent / "trial0", args, rng.randint(2, steps - 20)),
        Trial(home().parent / "trial1", args, rng.randint(2, steps - 8)),
    ]
    print(f"killing the two runs at curve lines {[t.kill_at for t in trials]}")
    watch(trials)
    run_ids = [t.check_killed() for t in trials]
    first = trials[0]
    again = Trial(first.home, ["resume", run_ids[0]], rng.randint(first.lines() + 1, steps - 8))
    print(f"killing the first run again during its resume at curve line {again.kill_at}")
    watch([again])
    assert again.check_killed() == run_ids[0]
    for trial, run_id in zip(trials, run_ids):
        os.environ["ZOO_HOME"] = str(trial.home)  # the isolated fixture restores it
        resumed = resume_continues(monkeypatch, run_id, steps, "--json")
        done = json.loads(resumed.out)
        assert done["run_id"] == run_id and done["status"] == "finished"
        assert_same_run(done, reference)
        assert not (trial.home / run_id / "checkpoints").exists()  # removed once recorded
        with Store() as store:
            assert store.get(run_id)["resumed"] == (2 if trial is first else 1)


@pytest.mark.slow
def test_transformers_models_resume_bit_identically_after_sigkill(tiny_text, tmp_path):
    """gpt2 and llama language models and a bert classifier, with dropout, each killed with
    SIGKILL at a random step (side by side) and resumed: the same run as uninterrupted."""
    labelled = tmp_path / "labelled.csv"
    labelled.write_text(
        "text,label\n"
        + "".join(
            f"film {i} was {'good' if i % 2 else 'bad'} {'and fine' * (i % 3)},{i % 2}\n"
            for i in range(120)
        )
    )
    steps, rng = 16, random.SystemRandom()
    cells = [
        ("gpt2-char", tiny_text, TINY_DECODER),
        ("llama-char", tiny_text, TINY_DECODER),
        ("bert-char", labelled, TINY_ANY),
    ]
    references = [reference_run(data, steps, model=model, tiny=tiny) for model, data, tiny in cells]
    trials = [
        Trial(
            home().parent / f"trial-{model}",
            run_args(data, steps, model=model, tiny=tiny),
            rng.randint(1, steps - 4),
        )
        for model, data, tiny in cells
    ]
    watch(trials)
    for trial, reference in zip(trials, references):
        run_id = trial.check_killed()
        os.environ["ZOO_HOME"] = str(trial.home)  # the isolated fixture restores it
        resumed = run_cli("resume", run_id, "--json")
        assert resumed.code == 0, (trial.kill_at, resumed)
        assert_same_run(json.loads(resumed.out), reference)


@pytest.mark.slow
def test_resume_after_ctrl_c_matches_and_prints_the_run_summary(tiny_text, monkeypatch):
    run_id = interrupted_run(monkeypatch, tiny_text, 5)
    with Store() as store:
        assert store.get(run_id)["status"] == "interrupted"
    ckpt = checkpoint.latest(home() / run_id)
    assert ckpt.step == 5 and len(list(checkpoint.folder(home() / run_id).iterdir())) == 2
    text = resume_continues(monkeypatch, run_id, 12)
    assert f"run {run_id}" in text.out and "status finished" in text.out
    assert f"saved in {home() / run_id}" in text.out.strip().splitlines()
    reference = reference_run(tiny_text)
    with Store() as store:
        row = store.get(run_id)
    assert row["status"] == "finished" and row["resumed"] == 1
    assert_same_run({"run_id": run_id, "metrics": row["metrics"]}, reference)
    again = run_cli("resume", run_id)
    assert again.code == 2 and "already finished" in again.err


@pytest.mark.slow
def test_numpy_model_resumes_bit_identically(tiny_text, monkeypatch):
    """A model that is not torch: its moments, step count and dropout generator resume."""
    run_id = interrupted_run(monkeypatch, tiny_text, 5, model="numpy-char")
    result = resume_continues(monkeypatch, run_id, 12, "--json")
    assert_same_run(json.loads(result.out), reference_run(tiny_text, model="numpy-char"))


@pytest.mark.slow
@pytest.mark.parametrize("model", ["decoder-char", "encoder-wordpunct"])
def test_classification_resumes_bit_identically(tmp_path, monkeypatch, model):
    """Shuffled length-bucketed epochs (a queue the pipeline keeps) and the best weights so
    far both come back from the checkpoint; so do the runners-up whose weights it averages
    (average_best, set for encoder-wordpunct)."""
    rng = np.random.default_rng(0)
    words = {"pos": ["good", "great", "fine"], "neg": ["bad", "awful", "dull"]}
    rows = ["text,label"] + [
        f"film {i} was {' and '.join(rng.choice(words[label], size=1 + i % 4))},{label}"
        for i, label in enumerate(["pos", "neg"] * 60)
    ]
    labelled = tmp_path / "labelled.csv"
    labelled.write_text("\n".join(rows) + "\n")
    # three validations before the stop, and none of them ends the run early
    tiny = [*TINY_ANY, "--set", "eval_interval=2", "--set", "patience=0"]
    if model == "encoder-wordpunct":
        tiny += ["--set", "average_best=5"]
    run_id = interrupted_run(monkeypatch, labelled, 7, steps=14, tiny=tiny, model=model)
    saved = checkpoint.latest(home() / run_id)
    assert saved.arrays("best")  # the best weights so far
    if model == "encoder-wordpunct":  # the runners-up so far, too
        assert saved.arrays("runner_up0") and saved.arrays("runner_up1")
    result = resume_continues(monkeypatch, run_id, 14, "--json")
    done = json.loads(result.out)
    assert done["task"] == "classification"
    assert_same_run(done, reference_run(labelled, 14, tiny=tiny, model=model))


@pytest.mark.slow
def test_resume_without_a_checkpoint_starts_over(tiny_text, monkeypatch):
    run_id = interrupted_run(monkeypatch, tiny_text, 3)
    checkpoint.remove_all(home() / run_id)
    result = run_cli("resume", run_id, "--json")
    assert result.code == 0, result
    assert "from the start" not in result.out  # progress notes go to stderr, not the JSON
    assert_same_run(json.loads(result.out), reference_run(tiny_text))


@pytest.mark.parametrize(
    "change, message",
    [
        ("config", "config differs"),
        ("dataset", "dataset changed"),
        ("tokenizer", "tokenizer.json differs"),
        ("version", "zoo version differs"),
    ],
)
def test_resume_refuses_what_changed(tiny_text, monkeypatch, change, message):
    run_id = interrupted_run(monkeypatch, tiny_text, 4)
    folder = home() / run_id
    if change == "config":
        config = json.loads((folder / "config.json").read_text())
        config["configs"]["train"]["lr"] = 0.5
        (folder / "config.json").write_text(json.dumps(config))
    elif change == "dataset":
        with open(tiny_text, "a", encoding="utf-8") as handle:
            handle.write("one more line that changes the dataset\n")
    elif change == "tokenizer":
        data = json.loads((folder / "tokenizer.json").read_text())
        data["model"]["vocab"]["\u2603"] = len(data["model"]["vocab"])
        (folder / "tokenizer.json").write_text(json.dumps(data))
    else:
        monkeypatch.setattr("zoo.__version__", "99.0")
    result = run_cli("resume", run_id)
    assert result.code == 2, result
    assert message in result.err and f"cannot resume run {run_id}" in result.err
    assert len(result.err.strip().splitlines()) == 1
    with Store() as store:
        assert store.get(run_id)["status"] == "interrupted"  # untouched


def test_resume_refuses_runs_that_are_not_resumable(tiny_text):
    assert run_cli("resume", "nope").code == 2
    with Store() as store:
        store.insert("live", model="m")  # this process: alive
    result = run_cli("resume", "live")
    assert result.code == 2 and "still running" in result.err


def test_interrupted_checkpoint_write_is_never_loaded(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    state = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}

    def write(step):
        return checkpoint.save(run, step, {"model": {"w": state["w"] * step}}, {"loop": step})

    write(1)
    write(2)
    # 1. a failure between writing the files and renaming the folder into place
    real_replace = os.replace

    def failing_replace(src, dst):
        if "step-00000003" in str(dst):
            raise OSError(errno.EIO, "injected failure before the rename")
        return real_replace(src, dst)

    with monkeypatch.context() as patch:
        patch.setattr(checkpoint.os, "replace", failing_replace)
        with pytest.raises(Exception, match="injected failure"):
            write(3)
    assert checkpoint.latest(run).step == 2
    assert not list(checkpoint.folder(run).glob(".tmp-*"))
    # 2. renamed, but the process dies before the commit marker lands
    with monkeypatch.context() as patch:
        patch.setattr(
            checkpoint, "atomic_write_json", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt())
        )
        with pytest.raises(KeyboardInterrupt):
            write(4)
    assert (checkpoint.folder(run) / "step-00000004").is_dir()
    notes = []
    ckpt = checkpoint.latest(run, warn=notes.append)
    assert ckpt.step == 2 and "commit marker" in notes[0]
    np.testing.assert_array_equal(ckpt.arrays("model")["w"], state["w"] * 2)
    # 3. a committed checkpoint damaged afterwards: the one before it is used
    write(5)
    with open(checkpoint.folder(run) / "step-00000005" / "model.safetensors", "r+b") as handle:
        handle.seek(-4, os.SEEK_END)
        handle.write(b"\x00\x01\x02\x03")
    notes.clear()
    assert checkpoint.latest(run, warn=notes.append).step == 2
    assert "checksum" in notes[0]
    # 4. only the newest KEEP committed checkpoints stay
    write(6)
    write(7)
    kept = sorted(p.name for p in checkpoint.folder(run).iterdir())
    assert kept == ["step-00000006", "step-00000007"]


def test_checkpoint_holds_every_rng_and_restores_them_in_place(tmp_path):
    import torch

    from zoo.train import generators

    generator = np.random.default_rng(7)
    random.seed(3), np.random.seed(4), torch.manual_seed(5)
    meta, arrays = generators.capture_rng({"g": generator})
    expected = (random.random(), np.random.rand(), torch.rand(1).item(), generator.random())
    checkpoint.save(tmp_path, 1, {"rng": arrays}, {"rng": meta})
    random.seed(0), np.random.seed(0), torch.manual_seed(0), generator.random()
    ckpt = checkpoint.latest(tmp_path)
    generators.restore_rng(ckpt.meta["rng"], ckpt.arrays("rng"), {"g": generator})
    assert (random.random(), np.random.rand(), torch.rand(1).item(), generator.random()) == expected


def test_optimizer_state_round_trips_bit_exactly():
    import torch

    from zoo.train.losses import cross_entropy
    from zoo.train.torch_model import TorchModel

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.out = torch.nn.Embedding(10, 8), torch.nn.Linear(8, 10)

        def forward(self, x, mask=None):
            return self.out(self.emb(x))

    def model():
        torch.manual_seed(0)
        m = TorchModel(Net(), loss=cross_entropy)
        m.configure_optimizer(1e-2, 0.1)
        return m

    x = np.random.default_rng(0).integers(0, 10, size=(4, 5))
    a = model()
    for _ in range(3):
        a.train_step(x, x, 1e-2)
    b = model()
    b.load_state_dict(a.state_dict())
    b.load_optimizer_state(*a.optimizer_state())
    for _ in range(3):
        assert a.train_step(x, x, 1e-2) == b.train_step(x, x, 1e-2)
    for name, value in a.state_dict().items():
        assert np.array_equal(value, b.state_dict()[name]), name


# -- atomic writes: read-only or full runs folder ------------------------------------
def test_unwritable_runs_folder_exits_non_zero_and_never_says_saved(
    tiny_text, tmp_path, monkeypatch
):
    runs = tmp_path / "readonly-runs"
    if os.geteuid() != 0:
        runs.mkdir()
        runs.chmod(0o555)
    else:  # root ignores permissions: a runs folder that cannot be created is the same fault
        runs.parent.joinpath("a-file").write_text("not a folder")
        runs = runs.parent / "a-file" / "runs"
    monkeypatch.setenv("ZOO_HOME", str(runs))
    result = run_cli(*run_args(tiny_text, 3))
    assert result.code == 2, result
    assert "cannot" in result.err and len(result.err.strip().splitlines()) == 1
    assert result.out == "" and "saved" not in result.err


@pytest.mark.parametrize("failing", ["config.json", "checkpoint", "model.safetensors"])
def test_full_disk_fails_the_run_and_keeps_the_last_checkpoint(tiny_text, monkeypatch, failing):
    """ENOSPC injected at one write (as root, permissions cannot make a folder full)."""
    real_fsync = os.fsync

    def full(path: str) -> bool:
        if failing == "checkpoint":
            return "step-00000004" in path
        return failing in path and "checkpoints" not in path

    def fsync(fd):
        if full(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", fsync)  # the os module zoo.io and zoo.train.checkpoints use
        result = run_cli(*run_args(tiny_text, 6, 1, "--set", "checkpoint_every=2"))
    assert result.code == 2, result
    assert "No space left on device" in result.err and len(result.err.strip().splitlines()) == 1
    assert result.out == "" and "saved in" not in result.err
    rows = Store().rows()
    if failing == "config.json":  # before the run started: nothing recorded
        assert rows == []
        return
    assert [r["status"] for r in rows] == ["failed"]
    if failing == "checkpoint":
        run_id = rows[0]["id"]
        assert checkpoint.latest(home() / run_id).step == 2
        resumed = run_cli("resume", run_id, "--json")  # space is back
        assert resumed.code == 0, resumed
        assert json.loads(resumed.out)["metrics"]["steps"] == 6


# -- safe loading --------------------------------------------------------------------
def python_sources():
    skip = {Path(__file__).resolve()}
    for folder in ("zoo", "plugins", "pipelines", "tests", "benchmarks", "examples", "scripts"):
        for path in (REPO / folder).rglob("*.py"):
            if path.resolve() not in skip and ".venv" not in path.parts:
                yield path


def test_sources_never_unpickle_or_trust_remote_code():
    offences = []
    banned = re.compile(
        r"\bimport\s+(c?pickle|dill|cloudpickle|joblib|shelve|marshal)\b|"
        r"\bfrom\s+(c?pickle|dill|cloudpickle|joblib|shelve|marshal)\s+import|"
        r"\b(c?pickle|dill|cloudpickle|joblib|marshal)\.\w+\s*\(|read_pickle|allow_pickle\s*=\s*True|"
        r"trust_remote_code\s*=\s*True|(?<![\w.])(eval|exec)\s*\(|torch\.jit\.load"
    )
    sources = list(python_sources())
    assert len(sources) > 20
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for match in banned.finditer(text):
            offences.append(f"{path.relative_to(REPO)}: {match.group(0)}")
        for match in re.finditer(r"torch\.load\s*\(", text):
            call = text[match.end() : match.end() + 300].split(")")[0]
            if not re.search(r"weights_only\s*=\s*True", call):
                offences.append(f"{path.relative_to(REPO)}: torch.load without weights_only=True")
    assert offences == []


class _Planted:
    """Unpickling this creates a marker file: proof that a loader ran the pickle."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_planted_pickles_and_corrupt_files_are_refused(tiny_text, tmp_path):
    result = run_cli(*run_args(tiny_text, 3))
    assert result.code == 0, result
    folder = home() / json.loads(result.out)["run_id"]
    run_id = folder.name
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Planted(marker))
    control = tmp_path / "control"  # the payload is live: unpickling it makes the marker
    subprocess.run(
        [sys.executable, "-c", "import pickle,sys; pickle.loads(sys.stdin.buffer.read())"],
        input=pickle.dumps(_Planted(control)),
        check=True,
        cwd=REPO / "tests",
    )
    assert control.exists()

    good = {
        name: (folder / name).read_bytes()
        for name in ("model.safetensors", "config.json", "tokenizer.json")
    }
    weights = good["model.safetensors"]
    header = int.from_bytes(weights[:8], "little")
    from safetensors.numpy import save

    cases = {
        "pickle as weights": ("model.safetensors", payload),
        "pickle as config": ("config.json", payload),
        "pickle as tokenizer": ("tokenizer.json", payload),
        "truncated weights": ("model.safetensors", weights[: len(weights) // 2]),
        "empty weights": ("model.safetensors", b""),
        "header longer than file": (
            "model.safetensors",
            (10**9).to_bytes(8, "little") + weights[8:],
        ),
        "header not JSON": (
            "model.safetensors",
            header.to_bytes(8, "little") + b"\xff" * header + weights[8 + header :],
        ),
        "wrong tensors": (
            "model.safetensors",
            save({"tok_emb.weight": np.zeros((3, 3), np.float32)}),
        ),
        "wrong shapes": (
            "model.safetensors",
            save(
                {
                    "tok_emb.weight": np.zeros((5, 7), np.float32),
                    "pos_emb.weight": np.zeros((2, 2), np.float32),
                }
            ),
        ),
    }
    (folder / "model.pt").write_bytes(payload)  # decoys a careless loader might try
    (folder / "pytorch_model.bin").write_bytes(payload)
    for case, (name, data) in cases.items():
        (folder / name).write_bytes(data)
        result = run_cli("generate", run_id, "--tokens", 3)
        assert result.code == 2, (case, result)
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.err, (case, result.err)
        assert name in lines[0] or "weights do not fit" in lines[0], (case, lines[0])
        (folder / name).write_bytes(good[name])
    assert not marker.exists()
    assert run_cli("generate", run_id, "--tokens", 3).code == 0  # restored: loads again


def test_planted_pickle_in_a_checkpoint_is_refused(tiny_text, monkeypatch, tmp_path):
    run_id = interrupted_run(monkeypatch, tiny_text, 3)
    ckpt = checkpoint.latest(home() / run_id)
    marker = tmp_path / "pwned"
    target = ckpt.path / "optimizer.safetensors"
    target.write_bytes(pickle.dumps(_Planted(marker)))
    # a forger who also rewrites the commit marker gets past the checksum, not the parser
    commit = json.loads((ckpt.path / "COMMIT").read_text())
    commit["files"]["optimizer.safetensors"] = checkpoint.file_sha256(target)
    (ckpt.path / "COMMIT").write_text(json.dumps(commit))
    result = run_cli("resume", run_id)
    assert result.code == 2 and "not a valid safetensors file" in result.err, result
    assert not marker.exists()


def test_dataset_folders_never_run_code(tmp_path):
    marker = tmp_path / "pwned"
    folder = tmp_path / "evil_dataset"
    folder.mkdir()
    (folder / "evil_dataset.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (folder / "train.txt").write_text("\n".join(f"row {i}" for i in range(50)))
    result = run_cli(*run_args(folder, 2))
    assert not marker.exists()
    assert result.code == 2, result  # the datasets library refuses a folder with a script
    assert "evil_dataset.py" in result.err and len(result.err.strip().splitlines()) == 1


# -- divergence ----------------------------------------------------------------------
def test_absurd_learning_rate_diverges_and_keeps_the_last_good_checkpoint(tiny_text):
    # lr=1e4 makes the weights blow up within a few steps, in fp32 and in bf16 alike (lr=30
    # diverged in one precision and trained on in the other): the step is stopped before
    # the optimizer, with the loss and the gradient norm named.
    result = run_cli(*run_args(tiny_text, 20, 0, "--set", "lr=1e4", "--set", "dropout=0"))
    assert result.code == 2, result
    line = result.err.strip()
    assert len(line.splitlines()) == 1 and "diverged at step" in line and "gradient norm" in line
    (row,) = Store().rows()
    step = row["metrics"]["diverged_step"]
    assert row["status"] == "diverged" and f"step {step}" in row["error"]
    assert row["metrics"]["checkpoint_step"] == step - 1
    ckpt = checkpoint.latest(home() / row["id"])
    assert ckpt.step == step - 1
    assert all(np.isfinite(v).all() for v in ckpt.arrays("model").values())
    assert not (home() / row["id"] / "model.safetensors").exists()
    assert len(curve(home() / row["id"])) == step - 1
    again = run_cli("resume", row["id"])
    assert again.code == 2 and "diverged" in again.err


def test_non_finite_loss_or_gradient_never_reaches_the_weights():
    import torch

    from zoo.train.losses import cross_entropy
    from zoo.train.model import NonFiniteError
    from zoo.train.torch_model import TorchModel

    class Blow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * float("inf")

    class Net(torch.nn.Module):
        def __init__(self, blow):
            super().__init__()
            self.emb, self.blow = torch.nn.Embedding(5, 5), blow

        def forward(self, x, mask=None):
            out = self.emb(x)
            return Blow.apply(out) if self.blow else out

    x = np.zeros((2, 3), dtype=np.int64)
    for blow, poison in ((True, False), (False, True)):
        model = TorchModel(Net(blow), loss=cross_entropy)
        model.configure_optimizer(1e-2, 0.0)
        if poison:
            with torch.no_grad():
                model.module.emb.weight[0, 0] = float("nan")
        before = {k: v.copy() for k, v in model.state_dict().items()}
        with pytest.raises(NonFiniteError) as info:
            model.train_step(x, x, 1e-2, grad_clip=0.0 if blow else 1.0)
        assert math.isfinite(info.value.loss) == blow
        for name, value in model.state_dict().items():
            np.testing.assert_array_equal(value, before[name])
        assert not model.optimizer.state  # the optimizer never stepped


# -- the results store ---------------------------------------------------------------
def test_store_migrates_older_databases(tmp_path):
    empty = tmp_path / "v0.db"
    sqlite3.connect(empty).close()
    with Store(empty) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        store.insert("a", model="m")
        assert store.get("a")["resumed"] == 0
    old = tmp_path / "v1.db"
    conn = sqlite3.connect(old)
    conn.executescript(MIGRATIONS[1] + "; PRAGMA user_version = 1;")
    conn.execute(
        "INSERT INTO runs (id, status, created, metrics) VALUES ('r1', 'finished', 1.0, "
        "'{\"val_loss\": 1.5}')"
    )
    conn.commit()
    conn.close()
    with Store(old) as store:
        row = store.get("r1")
        assert row["metrics"] == {"val_loss": 1.5} and row["resumed"] == 0
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        indexes = {r[1] for r in store.conn.execute("PRAGMA index_list(runs)")}
        assert "runs_by_status" in indexes
    newer = tmp_path / "v99.db"
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(Exception, match="newer than this zoo understands"):
        Store(newer)


WRITER = """
import sys
from zoo.records.store import Store
with Store(sys.argv[1]) as store:
    for i in range(200):
        run_id = f"{sys.argv[2]}-{i}"
        store.insert(run_id, model="m", metrics={"i": i})
        store.update(run_id, status="finished", metrics={"i": i, "done": True})
"""


def test_concurrent_writers_lose_nothing(tmp_path):
    db = tmp_path / "zoo.db"
    Store(db).close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), name], cwd=REPO, stderr=subprocess.PIPE
        )
        for name in ("a", "b")
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    with Store(db) as store:
        rows = store.rows()
    assert len(rows) == 400 and len({r["id"] for r in rows}) == 400
    assert all(r["status"] == "finished" and r["metrics"]["done"] for r in rows)


def _open_store(path: str) -> str:
    try:
        Store(Path(path)).close()
        return "ok"
    except Exception as exc:  # reported back to the test, which names it
        return str(exc)


@pytest.mark.slow
def test_processes_opening_a_new_store_at_once_all_get_it(tmp_path):
    # Switching a new store to WAL is answered 'locked' at once, without the busy
    # timeout, when another process switches it too: two sweeps started together hit it.
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(6) as pool:
        for attempt in range(30):
            path = str(tmp_path / f"zoo-{attempt}.db")
            answers = pool.map(_open_store, [path] * 6, chunksize=1)
            assert answers == ["ok"] * 6, answers


def test_killed_writer_leaves_a_readable_store_and_stale_rows_are_recovered(tmp_path):
    db = tmp_path / "zoo.db"
    Store(db).close()
    script = (
        "import sys\nfrom zoo.records.store import Store\ns = Store(sys.argv[1])\ni = 0\n"
        "while True:\n    s.insert(f'k{i}', model='x' * 10000)\n    i += 1\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(db)], cwd=REPO)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.05)
        with sqlite3.connect(db, timeout=30) as conn:
            if conn.execute("SELECT count(*) FROM runs").fetchone()[0] >= 20:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with Store(db) as store:
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        store.insert("alive", model="me")  # this process: still running
        store.insert("reused", model="x", proc_start="1")  # this pid, but another process
        store.insert("elsewhere", model="x", host="another-host", pid=proc.pid)
    with Store(db) as store:
        rows = {r["id"]: r for r in store.rows()}
    killed = [r for k, r in rows.items() if k.startswith("k")]
    assert len(killed) >= 20
    assert {r["status"] for r in killed} == {"interrupted"}
    assert rows["alive"]["status"] == "running"
    assert rows["reused"]["status"] == "interrupted"
    assert rows["elsewhere"]["status"] == "running"  # another host's pid says nothing here


def test_awkward_values_round_trip_through_the_pandas_tables(tmp_path):
    long_text = "ü" * 100_000
    metrics = {
        "nan": float("nan"),
        "inf": float("inf"),
        "ninf": float("-inf"),
        "unicode": "naïve café 🦊 ∑",
        "long": long_text,
        "f32": np.float32(0.25),
        "i64": np.int64(2**40),
        "big": 2**53 + 1,
    }
    with Store(tmp_path / "zoo.db") as store:
        store.insert("r", model="modèle 🦊", dataset=long_text, metrics=metrics)
        frame = store.frame()
        row = store.get("r")
    got = frame.iloc[0]
    assert math.isnan(got["nan"]) and got["inf"] == math.inf and got["ninf"] == -math.inf
    assert got["unicode"] == metrics["unicode"] and got["long"] == long_text
    assert got["f32"] == 0.25 and got["i64"] == 2**40 and got["big"] == 2**53 + 1
    assert got["model"] == "modèle 🦊" and got["dataset"] == long_text
    assert isinstance(row["metrics"]["f32"], float) and isinstance(row["metrics"]["i64"], int)


def test_a_diverged_sweep_cell_is_recorded_and_the_sweep_goes_on(tiny_text):
    result = run_cli(*seed_sweep(tiny_text, 12, "--set", "lr=1e4", "--set", "checkpoint_every=1"))
    rows = Store().rows()
    assert [r["status"] for r in rows] == ["diverged", "diverged"], result
    assert [r["seed"] for r in rows] == [0, 1]  # the second cell ran after the first diverged
    assert result.err.count("    diverged after") == 2, result.err
    for row in rows:
        assert checkpoint.latest(home() / row["id"]).step == row["metrics"]["diverged_step"] - 1


@pytest.mark.slow
def test_a_sweep_resumes_its_interrupted_cell_from_the_checkpoint(tiny_text, monkeypatch):
    sweep = seed_sweep(tiny_text, 8, "--set", "checkpoint_every=2")
    original = checkpoint.Checkpointer.save

    def save_then_stop(self, elapsed):
        original(self, elapsed)
        if self.result.steps >= 4:
            press_ctrl_c()

    with monkeypatch.context() as patch:
        patch.setattr(checkpoint.Checkpointer, "save", save_then_stop)
        assert run_cli(*sweep).code == 130
    (first,) = Store().rows()
    assert first["status"] == "interrupted" and first["seed"] == 0
    result = run_cli(*sweep)
    assert f"resuming interrupted run {first['id']}" in result.err, result
    rows = {r["seed"]: r for r in Store().rows()}
    assert len(rows) == 2 and rows[0]["id"] == first["id"]
    assert rows[0]["status"] == rows[1]["status"] == "finished"
    assert rows[0]["resumed"] == 1 and rows[1]["resumed"] == 0
    assert rows[0]["metrics"]["steps"] == 8


def interrupted_at_step(monkeypatch, dataset, stop_at: int, *settings) -> str:
    """A run stopped by Ctrl-C once its curve logs step ``stop_at`` (after any checkpoint)."""
    from zoo.train.job import RunFolder

    original = RunFolder.log

    def log_then_stop(self, record):
        original(self, record)
        if record.get("step") == stop_at and "train_loss" in record:
            press_ctrl_c()

    with monkeypatch.context() as patch:
        patch.setattr(RunFolder, "log", log_then_stop)
        result = run_cli(
            "run", "decoder-char", dataset, "--steps", 12, "--json", *TINY_DECODER, *settings
        )
    assert result.code == 130, result
    (run_id,) = run_folders(home())
    return run_id


def test_checkpoints_off_writes_none_and_resume_starts_over(tiny_text, monkeypatch):
    run_id = interrupted_at_step(
        monkeypatch, tiny_text, 6, "--set", "checkpoint_every=0", "--set", "checkpoint_seconds=0"
    )
    assert checkpoint.latest(home() / run_id) is None
    assert not checkpoint.folder(home() / run_id).exists() or not any(
        checkpoint.folder(home() / run_id).iterdir()
    )
    with steps_trained(monkeypatch) as trained:
        result = run_cli("resume", run_id)
    assert result.code == 0 and "from the start" in result.err, result
    assert trained == list(range(1, 13))


@pytest.mark.slow
def test_checkpoint_seconds_saves_by_time_alone(tiny_text, monkeypatch):
    """checkpoint_every=0 and a checkpoint_seconds shorter than a step: a checkpoint after
    every step, by the clock alone; with checkpoint_seconds=0 too there would be none."""
    run_id = interrupted_at_step(
        monkeypatch, tiny_text, 6, "--set", "checkpoint_every=0", "--set", "checkpoint_seconds=1e-9"
    )
    ckpt = checkpoint.latest(home() / run_id)
    assert ckpt is not None and ckpt.step >= 5
    resume_continues(monkeypatch, run_id, 12)


def test_a_run_draws_its_own_curve_inside_zoo_home_where_user_outputs_may_not_go(tmp_path):
    """ZOO_HOME is closed to files a user names (--output, --plot); zoo's own files in a run
    folder are not such outputs."""
    import json
    import os
    from pathlib import Path

    from conftest import run_cli

    result = run_cli("run", "digits-char", "digits", "--steps", 2, "--json", "--quiet")
    assert result.code == 0, result
    run_id = json.loads(result.out)["run_id"]
    assert (Path(os.environ["ZOO_HOME"]) / run_id / "curve.png").stat().st_size > 0
    refused = run_cli("plot", run_id, "--plot", str(Path(os.environ["ZOO_HOME"]) / "mine.png"))
    assert refused.code == 2 and "ZOO_HOME" in refused.err
