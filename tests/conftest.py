"""Shared fixtures: every test gets its own ZOO_HOME and working directory, third-party
entry points are not loaded unless a test asks for them, and the process-wide zoo is
rebuilt (and forgotten) around each test."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# Every worker and every zoo process a test starts imports zoo and the test modules again:
# compiled once into __pycache__ (pytest's rewritten tests too), even where
# PYTHONDONTWRITEBYTECODE asks otherwise, they load from there instead of compiling again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Tiny models train fastest on one torch thread on any machine (more threads spin on
# microsecond-sized ops: 16 of them make a test several times slower), and one count for
# this process and every subprocess a test starts (they inherit these variables) keeps their
# figures comparable bit for bit. A test about threads sets its own count.
TEST_THREADS = 1
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_variable] = str(TEST_THREADS)  # zoo.core.threads.THREAD_VARIABLES

# The checkout under test, whatever is installed: zoo from it, and zoo.plugins and
# zoo.pipelines from its plugins/ and pipelines/ folders, which an editable install would map
# to the checkout it was made from (with PYTHONPATH at a second checkout, a broken plugin
# there would stay green). Subprocesses find zoo there too.
CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CHECKOUT))
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")])
)


def _import_from_checkout(folder: str) -> None:
    import importlib.util

    import zoo

    name = f"zoo.{folder}"
    spec = importlib.util.spec_from_file_location(
        name, CHECKOUT / folder / "__init__.py", submodule_search_locations=[str(CHECKOUT / folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    setattr(zoo, folder, module)


for _folder in ("plugins", "pipelines"):
    _import_from_checkout(_folder)

import numpy as np  # noqa: E402  (after the thread variables: BLAS pools read them once)
import pytest  # noqa: E402

from zoo.cli.main import main  # noqa: E402
from zoo.core import loading  # noqa: E402

# A suite started in the background (`pytest &` in a script without job control, nohup)
# inherits an ignored SIGINT, and so does every process it starts. The tests that press
# Ctrl-C on zoo need it caught as a terminal delivers it: Python's own handler, here and
# (restored by Python at start) in every subprocess.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]
# Where the tests find the catalogue's Hub datasets: ZOO_DATASETS as the environment sets it,
# or the mirror of the development layout beside the repository. zoo itself names no such
# folder (its registry.toml has no mirrors); without one a test that needs it is skipped.
DATASETS = os.environ.get("ZOO_DATASETS") or str(REPO.parent / "shared" / "datasets")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Spread the tests over one pytest-xdist worker (the test extra) per CPU this process may
    use, an idle worker taking tests from a busy one's queue (``--dist worksteal``). Not where
    the command line chooses (`-n N`, `-n 0`, `-p no:xdist`), under `--pdb`, inside a worker,
    without xdist, or with a single CPU: there the tests run in this process."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    if config.option.numprocesses is not None or config.getoption("usepdb"):
        return
    if config.getoption("collectonly"):
        return
    from zoo.core.threads import usable_cpus

    # PYTEST_XDIST_AUTO_NUM_WORKERS as given; else xdist's count of cores, within the CPUs
    # this process may use (taskset, a container's cpuset or CPU quota)
    workers = config.hook.pytest_xdist_auto_num_workers(config=config)
    if not os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        workers = min(workers, usable_cpus())
    if workers < 2:
        return
    config.option.numprocesses = workers
    config.option.tx = ["popen"] * workers
    if config.option.dist == "no":
        config.option.dist = "worksteal"


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` need a CUDA device and are skipped without one."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("cuda"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch, request):
    import torch

    from zoo.core import threads

    # whatever a test before this one set or chose: torch's, the variables, zoo's choice
    torch.set_num_threads(TEST_THREADS)
    for variable in threads.THREAD_VARIABLES:
        monkeypatch.setenv(variable, str(TEST_THREADS))
    monkeypatch.setattr(threads, "_chosen", None)
    if request.node.get_closest_marker("cuda") is None:
        # Every other test computes on the CPU whatever the machine has: its expectations
        # (bit-identical reloads, figures recorded on the CPU) are the CPU's. Subprocesses see
        # no GPU either.
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    home = tmp_path / "home"
    monkeypatch.setenv("ZOO_HOME", str(home / "runs"))
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "")  # built-ins only, unless a test sets it
    monkeypatch.delenv("ZOO_REGISTRY", raising=False)
    monkeypatch.delenv("ZOO_STRICT_PLUGINS", raising=False)
    monkeypatch.setenv("ZOO_DATASETS", DATASETS)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    loading.reset_zoo()
    try:
        yield work
    finally:
        loading.reset_zoo()


class Result:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def __repr__(self):
        return f"Result(code={self.code}, out={self.out[-500:]!r}, err={self.err[-500:]!r})"


def run_cli(*args) -> Result:
    """Run `zoo ARGS` in this process and capture what it prints."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return Result(code, out.getvalue(), err.getvalue())


def press_ctrl_c() -> None:
    """What the user's Ctrl-C does to this process: a SIGINT, whose handler raises
    KeyboardInterrupt here (a bare `raise KeyboardInterrupt` is code failing, not Ctrl-C)."""
    signal.raise_signal(signal.SIGINT)


def run_python(code: str) -> list[str]:
    """Run Python code in a fresh interpreter (for what one process imports or sets for
    itself) and return the lines it prints; it must exit 0."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()


def run_zoo(*args, env=None, timeout=300, cwd=None) -> subprocess.CompletedProcess:
    """Run `python -m zoo ARGS` in a subprocess (for entry points, signals, imports)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "zoo", *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd,
    )


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def tiny_text(tmp_path) -> Path:
    """A small text file with train/validation/test made by the text loader's 'train' split."""
    path = tmp_path / "tiny.txt"
    lines = [f"line {i}: the quick brown fox jumps over the lazy dog {i % 7}." for i in range(400)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def negated_reviews(tmp_path) -> Path:
    """Sentiment carried by word order only: "not good" is negative, "good" positive."""
    return write_negated_reviews(tmp_path / "reviews.csv")


def write_negated_reviews(path: Path) -> Path:
    rng = np.random.default_rng(0)
    rows = ["text,label"]
    for i in range(300):
        word = rng.choice(["good", "great", "bad", "awful"])
        negated = i % 2 == 0
        positive = (word in ("good", "great")) != negated
        rows.append(
            f"the film was {'not ' if negated else ''}{word},{'pos' if positive else 'neg'}"
        )
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


TINY_DECODER = [
    "--set",
    "n_layer=1",
    "--set",
    "n_head=2",
    "--set",
    "n_embd=16",
    "--set",
    "block_size=16",
    "--set",
    "batch_size=4",
    "--set",
    "eval_interval=5",
    "--set",
    "eval_batches=2",
    "--set",
    "sample_tokens=20",
    "--set",
    "warmup_steps=2",
]


def without(settings: list, *keys: str) -> list:
    """A ``--set`` list without the settings named by ``keys``."""
    pairs = zip(settings[::2], settings[1::2])
    return [a for pair in pairs if pair[1].split("=")[0] not in keys for a in pair]


TINY_ANY = without(TINY_DECODER, "sample_tokens")  # any task: sample_tokens is the LM's
# a tiny decoder classifier (32-token texts, 8 per batch), and an encoder without dropout
TINY_DECODER_CLASSIFIER = [
    *without(
        TINY_DECODER, "sample_tokens", "block_size", "batch_size", "eval_interval", "eval_batches"
    ),
    *("--set", "block_size=32", "--set", "batch_size=8", "--set", "eval_interval=3"),
]
TINY_ENCODER = [*TINY_DECODER_CLASSIFIER, "--set", "dropout=0.0"]


def install_example(tmp_path_factory, name: str) -> Path:
    """The example package examples/NAME, installed for real into a folder of its own. pip
    builds from a copy: it builds in the source folder, which test processes running beside
    each other (pytest-xdist) would otherwise share."""
    target = tmp_path_factory.mktemp(name)
    source = tmp_path_factory.mktemp(f"{name}-source") / name
    shutil.copytree(
        REPO / "examples" / name, source, ignore=shutil.ignore_patterns("build", "*.egg-info")
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    return target


def seed_sweep(text, steps: int, *options, seeds: int = 2) -> list[str]:
    """`zoo sweep decoder-char --on TEXT --seeds N --steps STEPS` with the tiny decoder and
    further options: the sweep the executor and fault tests run."""
    return [
        "sweep",
        "decoder-char",
        "--on",
        str(text),
        "--seeds",
        str(seeds),
        "--steps",
        str(steps),
        *map(str, TINY_DECODER),
        *map(str, options),
    ]


MIRROR_DATASETS = (
    "karpathy/tiny_shakespeare",
    "dair-ai/emotion",
    "cornell-movie-review-data/rotten_tomatoes",
)


@pytest.fixture
def mirror():
    """The dataset mirror folders (ZOO_DATASETS, see DATASETS); a test that loads
    shakespeare, emotion or rotten_tomatoes takes this fixture and is skipped, with the
    reason, where the mirror is absent (the Hub is not reachable from the test machines)."""
    from zoo.core.catalogue import load_catalogue

    folders = [Path(p) for p in os.environ.get("ZOO_DATASETS", "").split(os.pathsep) if p]
    folders += list(load_catalogue().mirrors)
    missing = [d for d in MIRROR_DATASETS if not any((f / d).is_dir() for f in folders)]
    if missing:
        pytest.skip(
            f"the dataset mirror lacks {', '.join(missing)} (searched: "
            f"{', '.join(map(str, folders)) or 'nothing'}); set ZOO_DATASETS"
        )
    return folders


def loop_job(folder: Path, cfg):
    """A Job for the shared training loop alone (``zoo.train.loop.train``): ``cfg`` its
    TrainConfig, a fresh run folder at ``folder``, no architecture, tokenizer or dataset."""
    from zoo.train.job import Job, RunFolder

    return Job(
        model_name="loop",
        architecture=None,
        tokenizer=None,
        task="test",
        model_config=None,
        tokenizer_config=None,
        train_config=cfg,
        dataset=None,
        seed=0,
        device="cpu",
        run=RunFolder(folder).create(),
        quiet=True,
    )


def start_local_ray(ray) -> None:
    """A local Ray cluster of 2 CPUs whose workers run at the tests' own priority: Ray starts
    them at niceness 15, so on a loaded machine (the rest of the suite beside them) they
    starve, and a test's bound for a hung cluster trips on a slow one."""
    saved = os.environ.get("RAY_worker_niceness")
    os.environ["RAY_worker_niceness"] = "0"  # read by the raylet ray.init starts
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
    finally:
        if saved is None:
            os.environ.pop("RAY_worker_niceness")
        else:
            os.environ["RAY_worker_niceness"] = saved


def kill_a_worker_held_at_a_checkpoint(
    monkeypatch, tmp_path, workers: int, deadline: float = 600.0
):
    """Make every run of the coming sweep wait right after committing a checkpoint
    (zoo.train.checkpoints.hold_for_a_test), and in the background, once `workers` processes wait
    there (so each is mid-cell, with a checkpoint to resume from, and none can finish its
    cell first), SIGKILL one of them and let the others go on. Returns the thread and a
    list that receives the killed pid. The deadline only bounds a hung test: a slow CPU (an
    AVX2-only one under load) may take minutes to start two workers."""
    from zoo.train.checkpoints import HOLD_VARIABLE

    hold = tmp_path / "hold"
    hold.mkdir()
    monkeypatch.setenv(HOLD_VARIABLE, str(hold))
    killed = []

    def watch():
        end = time.time() + deadline
        try:
            while time.time() < end:
                held = sorted(hold.glob("held-*"))
                if len(held) >= workers:
                    pid = int(held[0].name.removeprefix("held-"))
                    if pid != os.getpid():  # a worker, never the test's own process
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    return
                time.sleep(0.02)
        finally:
            (hold / "release").touch()  # the other workers go on, and no run waits again

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, killed


@pytest.fixture
def one_thread(monkeypatch):
    """One torch thread here and in subprocesses: every test has it already (TEST_THREADS);
    a test that names this fixture says it depends on it."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def train_once(base: Path, commands: dict[str, list]) -> dict[str, dict]:
    """For a module-scoped fixture: each `zoo ARGS --json` of ``commands`` (name -> ARGS) run
    into a store of its own, base/"runs", as a test would (built-ins only, the tests' threads);
    name -> the JSON each printed. Tests copy the folder into their own ZOO_HOME."""
    import torch

    saved = {k: os.environ.get(k) for k in ("ZOO_HOME", "ZOO_LOAD_PLUGINS")}
    os.environ.update(ZOO_HOME=str(base / "runs"), ZOO_LOAD_PLUGINS="")
    torch.set_num_threads(TEST_THREADS)
    loading.reset_zoo()
    try:
        printed = {}
        for name, args in commands.items():
            result = run_cli(*args, "--json")
            assert result.code == 0, result
            printed[name] = json.loads(result.out)
        return printed
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
        loading.reset_zoo()


def amx_splits_bf16_sums() -> bool:
    """Whether torch runs bf16 matrix products on AMX here: its kernels split a weight
    gradient's sum by thread count, so one thread and two differ in the last bits (on
    AVX-512 BF16 without AMX, and on AVX2, they do not)."""
    from zoo.core.machine import cpu
    from zoo.train.precision import cpu_has_native_bf16

    return cpu_has_native_bf16() and "amx_tile" in cpu()["flags"]


skip_where_amx_splits_bf16_sums = pytest.mark.skipif(
    amx_splits_bf16_sums(),
    reason="bf16 matrix products on AMX sum in a thread-dependent order (thread counts "
    "change the last bits); held at AVX2 or on AVX-512 BF16 the property holds",
)
