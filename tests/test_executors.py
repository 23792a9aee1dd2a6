"""Sweeps in worker processes (--jobs N): the same metrics as one process, the driver as
the only writer of the store, a killed worker recorded as a failed cell, and a rerun that
resumes it from its checkpoint (tiny configs)."""

import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from conftest import (
    TINY_DECODER,
    kill_a_worker_held_at_a_checkpoint,
    run_cli,
    run_python,
    seed_sweep,
    skip_where_amx_splits_bf16_sums,
)

from zoo.records.store import Store, home
from zoo.sweeps.cells import plan_sweep
from zoo.sweeps.executors import make_executor
from zoo.sweeps.local import ProcessExecutor, available_cores
from zoo.train.job import RunOptions

TIMING = ("tokens_per_s", "train_time")


def rows_by_seed():
    with Store() as store:
        return {r["seed"]: r for r in store.rows()}


def metrics(row):
    return {k: v for k, v in row["metrics"].items() if k not in TIMING}


def split_evaluation_losses(found: dict) -> tuple[dict, dict]:
    """A run's metrics without, and with only, the losses its evaluations computed."""
    evaluated = {k: v for k, v in found.items() if k.endswith("_loss") and k != "train_loss"}
    return {k: v for k, v in found.items() if k not in evaluated}, evaluated


def sequential_sweep(sweep: list, threads: int) -> dict:
    """The sweep's cells one after another, in this process, on ``threads`` threads: its
    rows by seed."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        assert run_cli(*sweep).code == 0
    finally:
        torch.set_num_threads(before)
    return rows_by_seed()


@pytest.mark.slow
def test_jobs_2_matches_one_process_and_a_killed_worker_is_resumed_by_the_rerun(
    tiny_text, monkeypatch, tmp_path
):
    sweep = seed_sweep(tiny_text, 200, "--set", "checkpoint_every=10", "--set", "eval_interval=50")
    # The reference: one cell after another, in-process, at the workers' thread count (one
    # each on 2 cores): another thread count sums in another order and moves the metrics.
    alone = sequential_sweep(sweep, max(1, available_cores() // 2))
    monkeypatch.setenv("ZOO_HOME", str(tmp_path / "parallel"))

    # Both workers wait after their first checkpoint: one is killed mid-cell, the other goes on.
    thread, killed = kill_a_worker_held_at_a_checkpoint(monkeypatch, tmp_path, workers=2)
    first = run_cli(*sweep, "--jobs", 2)
    thread.join()
    assert killed, "no worker was killed"
    assert first.code == 1, first
    assert "running on 2 worker processes" in first.err
    assert f"(pid {killed[0]}): decoder-char" in first.err
    died = [line for line in first.err.splitlines() if "worker died" in line]
    assert len(died) == 2, first.err  # one warning as it happens, and the summary's line
    assert died[0].startswith("zoo: warning: sweep worker ")
    assert f"(pid {killed[0]}): worker died (killed by SIGKILL)" in died[0]
    assert "running the sweep again resumes it" in died[0]
    with Store() as store:
        rows = store.rows()
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["error"] == "worker died (killed by SIGKILL)"
    assert [r["status"] for r in rows].count("finished") == 1  # the other cell went on

    second = run_cli(*sweep, "--jobs", 2)
    assert second.code == 0, second
    assert "1 to run, 1 already finished" in second.err
    assert f"resuming failed run {failed[0]['id']}" in second.err  # from its checkpoint
    parallel = rows_by_seed()
    assert parallel[failed[0]["seed"]]["id"] == failed[0]["id"]
    assert parallel[failed[0]["seed"]]["resumed"] == 1
    for seed, row in parallel.items():
        assert row["status"] == "finished"
        assert metrics(row) == metrics(alone[seed])  # the killed and resumed one too
        assert row["pid"] == os.getpid()  # the driver wrote the row, not the worker
        assert (home() / row["id"] / "model.safetensors").is_file()  # the worker's folder


@pytest.mark.slow
@skip_where_amx_splits_bf16_sums
def test_digits_cells_train_the_same_with_jobs_2_as_with_all_threads_in_one_process(
    monkeypatch, tmp_path
):
    """The acceptance sweep's model (digits-char): --jobs 2 (half the threads per worker)
    gives every cell exactly the training of a sequential sweep on all the threads, because
    nothing in its training sums in a thread-dependent order (zoo.train.layers
    .ThreadInvariantLayerNorm, where the kernels in use would sum a LayerNorm so). The
    thread count is given (--threads), not the machine's: the same comparison everywhere."""
    threads = 2
    sweep = [
        "sweep",
        "digits-char",
        "--on",
        "digits",
        "--seeds",
        2,
        "--steps",
        30,
        "--set",
        "eval_interval=15",
        "--set",
        "dataset.train_size=3000",
        "--set",
        "dataset.validation_size=300",
        "--set",
        "dataset.test_size=300",
        "--set",
        "dataset.heldout_size=300",
    ]
    alone = sequential_sweep([*sweep, "--threads", threads], threads)  # --jobs 1
    monkeypatch.setenv("ZOO_HOME", str(tmp_path / "parallel"))
    result = run_cli(*sweep, "--jobs", 2, "--threads", threads)
    assert result.code == 0, result
    assert f"{threads // 2} thread(s) each" in result.err
    parallel = rows_by_seed()
    assert sorted(parallel) == sorted(alone) == [0, 1]
    for seed, row in parallel.items():
        # training is the same to the last bit; an evaluation's loss may differ in its last
        # digits where the BLAS splits a large batch's products across threads (MKL's AVX2
        # kernels do), its accuracies may not
        trained, scored = split_evaluation_losses(metrics(row))
        trained_alone, scored_alone = split_evaluation_losses(metrics(alone[seed]))
        assert trained == trained_alone
        assert scored == pytest.approx(scored_alone, rel=1e-7)


def test_executor_ray_without_ray_is_one_line_and_exit_2(tiny_text, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails, as when absent
    result = run_cli("sweep", "decoder-char", "--on", tiny_text, "--executor", "ray")
    assert result.code == 2, result
    assert result.err.strip() == (
        "zoo: error: the ray executor needs ray, of zoo's optional extra 'ray': "
        "pip install 'zoo[ray]'"
    )
    with Store() as store:
        assert store.rows() == []


def test_tune_and_an_onnx_export_without_their_extras_are_one_line_and_exit_2(
    tiny_text, monkeypatch
):
    monkeypatch.setitem(sys.modules, "optuna", None)
    result = run_cli(
        "tune", "decoder-char", "--on", tiny_text, "--space", "lr=log(1e-4,1e-2)", "--trials", 1
    )
    assert result.code == 2 and result.err.strip() == (
        "zoo: error: zoo tune needs optuna, of zoo's optional extra 'tune': pip install 'zoo[tune]'"
    ), result
    from zoo.errors import ZooError, require_extra

    monkeypatch.setitem(sys.modules, "onnxscript", None)
    with pytest.raises(ZooError, match=r"needs onnxscript, of zoo's optional extra 'export'"):
        require_extra(("onnx", "onnxscript"), "export", "an ONNX export")


def test_ray_options_need_the_ray_executor(tiny_text):
    result = run_cli("sweep", "decoder-char", "--on", tiny_text, "--address", "10.0.0.1:6379")
    assert result.code == 2 and "--address is for the ray executor" in result.err
    result = run_cli("sweep", "decoder-char", "--on", tiny_text, "--cell-gpus", "1")
    assert result.code == 2 and "error: --cell-gpus is for the ray executor" in result.err
    space = ("--space", "lr=log(1e-3,1e-1)", "--trials", "1")
    result = run_cli("tune", "decoder-char", "--on", tiny_text, *space, "--trial-cpus", "2")
    assert result.code == 2 and "error: --trial-cpus is for the ray executor" in result.err


def test_list_sweep_and_tune_help_import_neither_torch_optuna_nor_ray():
    probe = (
        "import sys\nfrom zoo.cli.main import main\n"
        "for argv in (['list'], ['sweep', '--help'], ['tune', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('torch' in sys.modules, 'ray' in sys.modules, 'optuna' in sys.modules)"
    )
    lines = run_python(probe)
    assert any("--executor {local,ray}" in line for line in lines)
    assert any("--pruner {median,halving,none}" in line for line in lines)
    assert lines[-1] == "False False False"


def test_ray_cells_ask_for_a_gpu_when_the_sweep_trains_on_cuda():
    pytest.importorskip("ray")
    assert make_executor(1, "ray", None, None, None, "cuda").gpus == 1
    assert make_executor(1, "ray", None, None, None, "auto").gpus == 0
    assert make_executor(1, "ray", None, 2, 0.5, "cuda").gpus == 0.5
    assert make_executor(1, "local", None, None, None, "cuda") is None


# A plugin architecture that raises KeyboardInterrupt itself, plugin code and not the user's
# Ctrl-C: its model in training with dropout 0.1, its build with dropout 0.2.
INTERRUPTING = """
from zoo.hookspecs import hookimpl


def build(config, spec):
    from zoo.plugins.decoder.model import build as decoder

    if config.dropout >= 0.2:
        raise KeyboardInterrupt
    model = decoder(config, spec)
    if config.dropout > 0:
        def forward(*args, **kwargs):
            raise KeyboardInterrupt
        model.forward = forward
    return model


@hookimpl
def register_architectures(register):
    register("interrupting", build, config="zoo.plugins.decoder:DecoderConfig",
             tasks=("language-modeling",))
"""


@pytest.fixture
def interrupting(isolated, monkeypatch):
    (isolated / "p_interrupting.py").write_text(INTERRUPTING)
    (isolated / "registry.toml").write_text('[plugins]\nmodules = ["p_interrupting.py"]\n')
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "p_interrupting")


@pytest.mark.slow
@pytest.mark.parametrize("workers", [["--jobs", 2], []], ids=["jobs-2", "in-process"])
def test_a_keyboard_interrupt_raised_by_plugin_code_fails_only_its_cell(
    interrupting, tiny_text, workers
):
    """With workers or without, a KeyboardInterrupt that no Ctrl-C caused is a failure of
    its cell, not the user stopping the sweep."""
    result = run_cli(
        "sweep",
        "interrupting-char",
        "--on",
        tiny_text,
        "--steps",
        2,
        *TINY_DECODER,
        "--grid",
        "dropout=0,0.1,0.2",
        *workers,
    )
    assert result.code == 1, result  # a cell failed; the sweep went on
    assert "interrupted" not in result.err and "zoo resume" not in result.err, result.err
    with Store() as store:
        rows = {r["config"]["configs"]["model"]["dropout"]: r for r in store.rows()}
    assert rows[0.0]["status"] == "finished", rows[0.0]
    for dropout in (0.1, 0.2):
        assert rows[dropout]["status"] == "failed", rows[dropout]
        assert "KeyboardInterrupt" in rows[dropout]["error"], rows[dropout]["error"]
    assert "from plugin 'p_interrupting' failed" in rows[0.2]["error"]


def test_a_keyboard_interrupt_raised_by_a_model_in_zoo_run_fails_the_run(interrupting, tiny_text):
    result = run_cli(
        "run", "interrupting-char", tiny_text, "--steps", 2, *TINY_DECODER, "--set", "dropout=0.1"
    )
    assert result.code == 2, result
    assert result.err.splitlines()[-1] == (
        "zoo: error: the run's code raised KeyboardInterrupt itself (no Ctrl-C from the user)"
    ), result.err
    with Store() as store:
        (row,) = store.rows()
    assert row["status"] == "failed", row
    assert row["error"] == (
        "InterruptRaisedByCode: the run's code raised KeyboardInterrupt "
        "itself (no Ctrl-C from the user)"
    )


@pytest.mark.slow
def test_a_real_ctrl_c_stops_a_sweep_with_workers_and_keeps_its_runs(tiny_text, tmp_path):
    """Ctrl-C at a terminal sends SIGINT to the driver and its workers alike: the workers
    leave it to the driver, which stops them, marks their runs interrupted and exits 130."""
    runs = tmp_path / "runs"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zoo",
            *seed_sweep(tiny_text, 100_000, "--jobs", 2),
        ],
        env={**os.environ, "ZOO_HOME": str(runs), "OMP_NUM_THREADS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.time() + 300  # generous: a loaded machine starts workers slowly
    while time.time() < deadline:  # both cells training
        curves = list(runs.glob("*/metrics.jsonl"))
        if len(curves) == 2 and all(len(c.read_text().splitlines()) >= 2 for c in curves):
            break
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)  # the whole process group, as a terminal does
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert (
        "zoo: interrupted; the sweep's runs are kept; run the same zoo sweep again to "
        "continue them\n"
    ) in err, err
    with Store(runs / "zoo.db") as store:
        assert [r["status"] for r in store.rows()] == ["interrupted", "interrupted"]


# A plugin architecture whose build reports how its worker process is set up, as its error.
PROBING = """
import gc
import os

from zoo.hookspecs import hookimpl


def build(config, spec):
    import torch

    raise RuntimeError(f"threads {torch.get_num_threads()}, OMP_NUM_THREADS "
                       f"{os.environ.get('OMP_NUM_THREADS')}, gc {gc.get_threshold()[0]}")


@hookimpl
def register_architectures(register):
    register("probing", build, config="zoo.plugins.decoder:DecoderConfig",
             tasks=("language-modeling",))
"""


@pytest.mark.slow
def test_a_worker_runs_on_its_thread_count_with_the_programs_garbage_collector(
    isolated, tiny_text, monkeypatch
):
    from zoo.core.process import YOUNG_GC_THRESHOLD

    (isolated / "p_probing.py").write_text(PROBING)
    (isolated / "registry.toml").write_text('[plugins]\nmodules = ["p_probing.py"]\n')
    monkeypatch.setenv("ZOO_LOAD_PLUGINS", "p_probing")
    sweep = plan_sweep(["probing-char"], [str(tiny_text)], overrides={"train.steps": 1})
    assert torch.get_num_threads() != 3 and os.environ.get("OMP_NUM_THREADS") != "3"
    ProcessExecutor(1, threads=3).run_cells(sweep, RunOptions(device="cpu"))
    [cell] = sweep.cells
    assert cell.status == "failed"
    assert cell.error.endswith(
        f"from plugin 'p_probing' failed: RuntimeError: threads 3, OMP_NUM_THREADS 3, "
        f"gc {YOUNG_GC_THRESHOLD}"
    ), cell.error
