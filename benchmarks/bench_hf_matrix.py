"""The compatibility matrix of transformers' model types: every `hf-<type>` architecture, for
each task it has a head for, through the stages a zoo run goes through, at a tiny shape:

  build     the model from zoo's config (the generic adapter's rule)
  train     20 steps (Tiny Shakespeare for language modeling and masked LM,
            rotten_tomatoes for classification, digits-transduction for the
            encoder-decoders' seq2seq), char tokenizer
  evaluate  the final evaluation: a finite primary metric
  resume    the same run SIGKILLed after a checkpoint and resumed (`zoo resume`): weights
            byte-identical and every metric equal to the uninterrupted run's
  export    `zoo export` in transformers' layout, which reloads the folder with
            from_pretrained and compares its predictions with the run's

Each cell (type and task) runs in a process forked from this one (torch and transformers are
imported once), under a time limit; the killed run is forked from the cell's. A stage that
fails records the one-line reason (a cell killed for time names the stage it was in), and the
later stages are not run. Results are merged into the results file after every cell: the
cells run replace their earlier results, the others are kept, so the matrix can be measured
in chunks (processes with disjoint --tasks or --types may run side by side) and an
interrupted one keeps what it measured. ``--missing`` runs only the selected
cells not measured yet, ``--failed`` only those that did not pass (``--failed "timed out"``:
those whose reason says so), ``--fresh`` forgets every earlier result.

    OMP_NUM_THREADS=1 python benchmarks/bench_hf_matrix.py --missing     # the whole matrix
    python benchmarks/bench_hf_matrix.py --types mamba,qwen2 --tasks classification
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import math
import os
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import RESULTS, header, load, table, write_results  # noqa: E402

NAME = "hf_matrix"
STAGES = ("build", "train", "evaluate", "resume", "export")
DATASETS = {
    "language-modeling": "shakespeare",
    "classification": "rotten_tomatoes",
    "masked-language-modeling": "shakespeare",
    "seq2seq": "digits-transduction",
}
SHAPE = {"n_layer": 2, "n_head": 2, "n_embd": 32, "dropout": 0.1}
TASK_SETTINGS = {
    "language-modeling": {"block_size": 32, "eval_tokens": 1024, "sample_tokens": 0},
    "classification": {"block_size": 32, "eval_batch_size": 64},
    "masked-language-modeling": {"block_size": 32, "eval_windows": 64},
    # digits-transduction's sources and targets are at most 15 characters, so a context of
    # 16 holds each (and a target's end); the final evaluation decodes the validation and
    # test splits greedily, each split in one batch
    "seq2seq": {"block_size": 16, "decode_batch_size": 512, "samples": 0},
}
# the architecture each task's warm-up run trains (one every built-in pipeline serves)
WARM_UP = {
    "language-modeling": "gpt2",
    "classification": "gpt2",
    "masked-language-modeling": "bert",
    "seq2seq": "hf-t5",
}
COMMON = {
    "batch_size": 4,
    "eval_interval": 10,
    "eval_batches": 2,
    "warmup_steps": 2,
    "checkpoint_every": 5,
}
TIMING = {"train_time", "tokens_per_s", "elapsed"}  # the only figures a resume may change
KILL_AT = 8  # curve lines written when the killed run is killed (20 steps write more)


def one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if len(lines) > 1 and text.endswith(":"):  # a header line ("... validation error:")
        text = f"{text} {lines[1]}"
    return f"{type(exc).__name__}: {text}"[:240]


def settings_for(task: str) -> dict:
    return {**SHAPE, **COMMON, **TASK_SETTINGS[task]}


def run_folders(home: Path) -> list[Path]:
    if not home.is_dir():
        return []
    return sorted(p for p in home.iterdir() if (p / "config.json").is_file())


def curve_lines(home: Path) -> int:
    logs = list(home.glob("*/metrics.jsonl"))
    return logs[0].read_bytes().count(b"\n") if logs else 0


def stage_build(architecture: str, task: str) -> None:
    from zoo.core.config import build_config
    from zoo.core.loading import get_zoo
    from zoo.plugin import TaskSpec

    entry = get_zoo().architectures.get(architecture)
    cls = entry.config_class()
    shape = {
        k: v for k, v in settings_for(task).items() if k in {f for f in cls.__dataclass_fields__}
    }
    spec = TaskSpec(task, 65, 2 if task == "classification" else None, 0)
    entry.load()(build_config(cls, shape), spec)


def train_and_evaluate(architecture: str, task: str, home: Path, steps: int) -> tuple[str, dict]:
    """The uninterrupted run: (its id, its metrics); raises with the stage that failed."""
    import zoo
    from zoo.core.names import get_task

    os.environ["ZOO_HOME"] = str(home)
    try:
        run = zoo.run(
            f"{architecture}-char",
            DATASETS[task],
            task=task,
            steps=steps,
            seed=1,
            quiet=True,
            settings=settings_for(task),
        )
    except BaseException as exc:
        folders = run_folders(home)
        trained = 0
        if folders and (folders[-1] / "metrics.jsonl").is_file():
            records = (folders[-1] / "metrics.jsonl").read_text().splitlines()
            trained = max(
                (json.loads(r).get("step", 0) for r in records if "train_loss" in r), default=0
            )
        raise StageFailed("evaluate" if trained >= steps else "train", one_line(exc)) from exc
    primary = get_task(task).primary
    value = run.metrics.get(primary)
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StageFailed("evaluate", f"{primary} is {value!r}")
    return run.id, dict(run.metrics)


def killed_run(architecture: str, task: str, home: Path, steps: int) -> str:
    """The same run in a forked process, SIGKILLed once its curve has KILL_AT lines."""
    pid = os.fork()
    if pid == 0:  # the run to be killed
        code = 0
        try:
            import zoo

            os.environ["ZOO_HOME"] = str(home)
            zoo.run(
                f"{architecture}-char",
                DATASETS[task],
                task=task,
                steps=steps,
                seed=1,
                quiet=True,
                settings=settings_for(task),
            )
        except BaseException:
            code = 1
        os._exit(code)
    killed = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if curve_lines(home) >= KILL_AT:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            killed = True
            break
        time.sleep(0.002)
    if not killed:
        raise StageFailed("resume", "the run ended before it could be killed")
    (folder,) = run_folders(home)
    return folder.name


def stage_resume(architecture, task, home: Path, reference: Path, metrics, steps) -> None:
    import zoo

    run_id = killed_run(architecture, task, home, steps)
    os.environ["ZOO_HOME"] = str(home)
    resumed = zoo.resume(run_id, quiet=True)
    ours, theirs = home / run_id / "model.safetensors", reference / "model.safetensors"
    if ours.read_bytes() != theirs.read_bytes():
        raise StageFailed("resume", "the resumed weights differ from the uninterrupted run's")
    for key, value in metrics.items():
        if key not in TIMING and resumed.metrics.get(key) != value:
            raise StageFailed(
                "resume", f"{key} {resumed.metrics.get(key)!r} after resuming, {value!r} before"
            )


def stage_export(run_id: str, home: Path, out: Path) -> None:
    import zoo

    os.environ["ZOO_HOME"] = str(home)
    done = zoo.export(run_id, out)
    if done.format != "transformers":
        raise StageFailed("export", f"exported as {done.format}, not transformers")


class StageFailed(Exception):
    def __init__(self, stage: str, reason: str):
        super().__init__(reason)
        self.stage, self.reason = stage, reason


def cell(architecture: str, task: str, scratch: Path, steps: int, answer: Path) -> dict:
    """Every stage of one cell, in this (forked) process: stage -> "pass" or the reason.
    What passed so far is written to ``answer`` after each stage, so a cell killed for time
    says which stage it was in."""
    result = dict.fromkeys(STAGES, "not run")
    progress = Progress(result, answer)
    answer.write_text(json.dumps(result))
    try:
        try:
            stage_build(architecture, task)
        except Exception as exc:
            raise StageFailed("build", one_line(exc)) from exc
        progress.passed("build")
        reference = scratch / "reference"
        reference.mkdir()
        run_id, metrics = train_and_evaluate(architecture, task, reference, steps)
        progress.passed("train", "evaluate")
        try:
            stage_resume(architecture, task, scratch / "killed", reference / run_id, metrics, steps)
        except StageFailed:
            raise
        except Exception as exc:
            raise StageFailed("resume", one_line(exc)) from exc
        progress.passed("resume")
        try:
            stage_export(run_id, reference, scratch / "export")
        except StageFailed:
            raise
        except Exception as exc:
            raise StageFailed("export", one_line(exc)) from exc
        progress.passed("export")
    except StageFailed as failed:
        if failed.stage == "train":
            result["evaluate"] = "not run"
        result[failed.stage] = failed.reason
    return result


class Progress:
    def __init__(self, result: dict, answer: Path):
        self.result, self.answer = result, answer

    def passed(self, *stages: str) -> None:
        self.result.update(dict.fromkeys(stages, "pass"))
        self.answer.write_text(json.dumps(self.result))


def run_cell(architecture: str, task: str, steps: int, timeout: float) -> dict:
    """One cell in a forked process group, killed whole after ``timeout`` seconds."""
    with tempfile.TemporaryDirectory(prefix="hf-matrix-") as tmp:
        scratch = Path(tmp)
        (scratch / "killed").mkdir()
        answer = scratch / "result.json"
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.setpgid(0, 0)
            try:
                result = {**cell(architecture, task, scratch, steps, answer), "done": True}
            except BaseException:
                reason = "crashed: " + traceback.format_exc().splitlines()[-1][:200]
                result = {**json.loads(answer.read_text()), "error": reason}
            answer.write_text(json.dumps(result))
            os._exit(0)
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() - start > timeout:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, _, usage = os.wait4(pid, 0)
                status = None
                break
            time.sleep(0.05)
        seconds = round(time.monotonic() - start, 1)
        cpu = round(usage.ru_utime + usage.ru_stime, 1)
        result = json.loads(answer.read_text()) if answer.is_file() else {}
        if not result.get("done"):  # killed for time, or died: the stage it was in says so
            what = "timed out" if status is None else f"crashed (exit status {status})"
            stuck = next((s for s in STAGES if result.get(s, "not run") == "not run"), "export")
            result[stuck] = result.get("error") or f"{what} after {seconds:.0f} s"
    result = {stage: result.get(stage, "not run") for stage in STAGES}
    return {
        "type": architecture.removeprefix("hf-"),
        "task": task,
        **result,
        "seconds": seconds,
        "cpu_s": cpu,
    }


def previous_cells() -> list[dict]:
    path = RESULTS / f"{NAME}.json"
    if not path.is_file():
        return []
    record = json.loads(path.read_text())
    rows = [row for table in record.get("tables", []) for row in table["rows"]]
    return [row for row in rows if row["build"] != "not measured"]


def write(cells: list[dict], todo: list[tuple[str, str]], args) -> None:
    measured = {(c["type"], c["task"]) for c in cells}
    missing = [
        {"type": a.removeprefix("hf-"), "task": t, **dict.fromkeys(STAGES, "not measured")}
        for a, t in todo
        if (a.removeprefix("hf-"), t) not in measured
    ]
    tables = []
    for task in DATASETS:
        rows = sorted((c for c in cells + missing if c["task"] == task), key=lambda c: c["type"])
        if not rows:
            continue
        passed = sum(all(c[s] == "pass" for s in STAGES[:4]) for c in rows)
        unmeasured = sum(c["build"] == "not measured" for c in rows)
        tables.append(
            table(
                f"{task}: {passed} of {len(rows)} types pass build, train, evaluate and "
                "bit-identical resume" + (f" ({unmeasured} not measured)" if unmeasured else ""),
                [("type", "type")]
                + [(s, s) for s in STAGES]
                + [("seconds", "s", ".0f"), ("cpu_s", "CPU s", ".0f")],
                rows,
            )
        )
    notes = [
        f"{len(measured)} of {len(measured) + len(missing)} cells measured; a cell the run "
        "did not reach says `not measured`. CPU time of the measured cells: "
        f"{sum(c.get('cpu_s') or 0 for c in cells) / 60:.0f} minutes (measured in chunks; "
        "earlier cells have no CPU figure).",
        f"Tiny shape: {SHAPE}, {args.steps} steps, char tokenizer; "
        f"per-cell limit {args.timeout:.0f} s, one process (OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}).",
    ]
    write_results(
        NAME,
        title="transformers compatibility matrix: every hf-* type through build, train, "
        "evaluate, resume and export",
        about="Each model type of transformers' causal-LM, sequence-classification, "
        "masked-LM and seq2seq-LM auto mappings, as zoo's `hf-<type>` architecture at a "
        "tiny shape: "
        "`pass`, or the one-line reason the stage failed (later stages are not run).",
        tables=tables,
        notes=notes,
        command="OMP_NUM_THREADS=1 python benchmarks/bench_hf_matrix.py --fresh",
    )


def plan(args) -> list[tuple[str, str]]:
    from zoo.plugins.transformers.types import PREFIX, model_types

    wanted = set(args.types.split(",")) if args.types else None
    cells = []  # type by type, so that a matrix cut short has each task's share
    for model_type, tasks in model_types().items():
        for task in args.tasks:
            if task in tasks and (wanted is None or model_type in wanted):
                cells.append((PREFIX + model_type, task))
    return cells


def warm_up(tasks: list[str]) -> None:
    """One run per task in this process before any cell forks, so that what a run imports
    (torch, transformers, datasets, pandas, matplotlib, sacrebleu: seconds each on a busy
    machine) is imported once, not once per cell."""
    with tempfile.TemporaryDirectory(prefix="hf-matrix-") as tmp:
        for task in tasks:
            try:
                train_and_evaluate(WARM_UP[task], task, Path(tmp) / task, 2)
            except StageFailed as failed:
                print(f"warm-up {task}: {failed.reason}")
    os.environ.pop("ZOO_HOME", None)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--tasks", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--types", default="", help="comma-separated model types (default all)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per cell")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--missing", action="store_true", help="run only cells not measured yet")
    which.add_argument(
        "--failed",
        nargs="?",
        const="",
        metavar="TEXT",
        help="run only cells that did not pass every stage (with TEXT: whose reason has it)",
    )
    which.add_argument("--fresh", action="store_true", help="forget every measured cell first")
    args = parser.parse_args(argv)
    header("transformers compatibility matrix")
    everything = plan(argparse.Namespace(types="", tasks=list(DATASETS)))
    cells = [] if args.fresh else previous_cells()
    todo = [cell for cell in plan(args) if wanted(cell, cells, args)]
    mine: list[dict] = []  # the cells this process measured, merged into the file's
    print(f"# {len(todo)} cells to run")
    # one tokenizer and encoding cache for every cell: each trains the same char tokenizer
    cache = tempfile.TemporaryDirectory(prefix="hf-matrix-cache-")
    os.environ["ZOO_CACHE"] = cache.name
    if todo:
        warm_up(sorted({task for _, task in todo}, key=list(DATASETS).index))
    for architecture, task in todo:
        row = run_cell(architecture, task, args.steps, args.timeout)
        mine.append(row)
        failed = [f"{s}: {row[s]}" for s in STAGES if row[s] not in ("pass", "not run")]
        print(
            f"{task:26s} {row['type']:24s} {row['seconds']:6.1f}s {row['cpu_s']:6.1f} CPU s "
            f"{failed[0] if failed else 'pass'}",
            flush=True,
        )
        with locked():  # another matrix process may be writing its own cells
            base = [] if args.fresh else previous_cells()
            ran = {(c["type"], c["task"]) for c in mine}
            write([c for c in base if (c["type"], c["task"]) not in ran] + mine, everything, args)
    print(f"# after: {load()}")
    return 0


@contextlib.contextmanager
def locked():
    """The results file to this process alone while it reads and rewrites it."""
    with open(Path(tempfile.gettempdir()) / f"zoo-{NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def wanted(cell: tuple[str, str], cells: list[dict], args) -> bool:
    """Whether a selected cell runs: always, or (--missing) if not measured, or (--failed)
    if it did not pass every stage and its reason holds the text given."""
    key = (cell[0].removeprefix("hf-"), cell[1])
    before = next((c for c in cells if (c["type"], c["task"]) == key), None)
    if args.missing:
        return before is None
    if args.failed is not None:
        if before is None:  # never measured: bare --failed runs it, --failed TEXT does not
            return not args.failed
        reasons = [before[s] for s in STAGES if before[s] not in ("pass", "not run")]
        return any(args.failed in r for r in reasons)
    return True


if __name__ == "__main__":
    raise SystemExit(main())
