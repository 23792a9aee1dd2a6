"""zoo tune: the search space is checked before anything trains; trials report each
validation through the training loop's callback and a pruned one is recorded as such;
trials never read the test split; the study survives a SIGKILL of the command."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import run_cli

from zoo.errors import ZooError
from zoo.records.store import Store, home
from zoo.tuning.space import parse_space

optuna = pytest.importorskip("optuna")

TINY = [
    "--set",
    "dim=8",
    "--set",
    "buckets=97",
    "--set",
    "batch_size=8",
    "--set",
    "eval_interval=5",
    "--set",
    "warmup_steps=0",
]
FASTTEXT_TINY = dict(dim=8, buckets=97, batch_size=8)


def tune_cli(dataset, *options):
    """`zoo tune` of fastText's learning rate on ``dataset``, on tiny settings."""
    return run_cli(
        "tune",
        "fasttext-wordpunct",
        "--on",
        dataset,
        "--space",
        "lr=log(1e-3,1e-1)",
        *options,
        *TINY,
    )


def tiny_search(dataset, **options):
    """A search of fastText's learning rate on ``dataset`` through zoo.tune, on tiny
    settings; ``options`` give the budget and the rest."""
    import zoo

    options = {"space": "lr=log(1e-3,1e-1)", "seeds": 1, **options}
    return zoo.tune(
        "fasttext-wordpunct",
        str(dataset),
        progress=False,
        device="cpu",
        **FASTTEXT_TINY,
        **options,
    )


def test_a_space_parses_into_typed_dimensions():
    space = parse_space(
        ["lr=log(1e-4,1e-2) n_layer=int(1,4)", "pooling=choice(mean,max,cls);dropout=float(0,0.5)"]
    )
    assert [str(d) for d in space] == [
        "lr=log(0.0001,0.01)",
        "n_layer=int(1,4)",
        "pooling=choice(mean,max,cls)",
        "dropout=float(0.0,0.5)",
    ]
    assert space[0].distribution().log and space[1].distribution().high == 4
    assert parse_space({"lr": "log(1e-3,1e-1)"})[0].low == 1e-3


@pytest.mark.parametrize(
    "text, message",
    [
        ("lr=exp(1,2)", "Unknown space kind 'exp'"),
        ("lr=log(0,1)", "log needs a positive low end"),
        ("lr=float(2,1)", "low (2) must be below high (1)"),
        ("n_layer=int(1,2.5)", "'2.5' is not an integer"),
        ("pooling=choice(mean)", "choice needs two or more values"),
        ("lr=log(1e-3,1e-1) lr=log(1e-3,1e-2)", "given twice"),
        ("lr=__import__('os')", "Unknown space kind '__import__'"),
        ("lr=log(1e-3,1e-1)+1", "expects key=kind(args)"),
        ("lr=float(nan,1)", "not a finite number"),
    ],
)
def test_a_malformed_space_is_one_clear_error(text, message):
    with pytest.raises(ZooError, match=re.escape(message)):
        parse_space(text)


@pytest.mark.parametrize(
    "space, message",
    [
        ("dimm=int(4,16)", "--space: Unknown config key 'dimm'. Did you mean: dim?"),
        ("dim=float(4,16)", "dim must be an integer"),
        ("lr=choice(fast,slow)", "lr must be a finite number"),
        ("buckets=int(2,9)", "buckets is both searched (space) and fixed"),
    ],
)
def test_a_space_that_does_not_fit_the_model_exits_2_before_training(
    negated_reviews, space, message
):
    result = run_cli(
        "tune",
        "fasttext-wordpunct",
        "--on",
        negated_reviews,
        "--space",
        space,
        "--trials",
        2,
        *TINY[2:],
    )  # all but dim
    assert result.code == 2, result
    assert message in result.err and len(result.err.strip().splitlines()) == 1
    assert not list(home().glob("2*"))  # no run folder: nothing trained
    with Store() as store:
        assert store.rows() == []


def _plan(dataset, **overrides):
    from zoo.train.plan import plan_run

    settings = {
        "dim": 8,
        "buckets": 97,
        "batch_size": 8,
        "eval_interval": 5,
        "warmup_steps": 0,
        "steps": 40,
        **overrides,
    }
    return plan_run("fasttext-wordpunct", str(dataset), overrides=settings)


def test_the_loop_callback_stops_a_run_which_is_recorded_with_its_status_and_step(negated_reviews):
    from zoo.train.job import RunOptions
    from zoo.train.runner import execute

    seen = []

    def prune_at_the_second_validation(step, validation, figures):
        seen.append((step, validation, sorted(figures)))
        return "pruned" if validation == 2 else None

    result = execute(
        _plan(negated_reviews),
        RunOptions(device="cpu", quiet=True),
        on_validate=prune_at_the_second_validation,
    )
    assert [(step, validation) for step, validation, _ in seen] == [(5, 1), (10, 2)]
    assert "val_accuracy" in seen[0][2]
    assert result["status"] == "pruned" and result["metrics"]["stopped_step"] == 10
    assert result["metrics"]["steps"] == 10
    with Store() as store:
        row = store.get(result["run_id"])
    assert row["status"] == "pruned" and row["metrics"]["stopped_step"] == 10


@pytest.mark.slow
def test_the_trial_reporter_prunes_a_trial_below_the_median(tmp_path):
    from zoo.tuning.study import TrialReporter

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    study = optuna.create_study(
        study_name="s",
        storage=url,
        direction="maximize",
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3),
    )
    for value in (0.8, 0.85, 0.9):
        trial = study.ask()
        for validation in (1, 2):
            trial.report(value, validation)
        study.tell(trial, value)
    weak, strong = study.ask(), study.ask()
    report = TrialReporter(url, "s", weak._trial_id, "median", ["val_accuracy", "val_loss"])
    # by validation number, not step (a smaller batch takes more steps to the same pass),
    # and never at the first validation: a slow starter gets a pass
    assert report(40, 1, {"val_loss": 0.3, "val_accuracy": 0.5}) is None
    assert report(80, 2, {"val_loss": 0.3, "val_accuracy": 0.5}) == "pruned"
    report = TrialReporter(url, "s", strong._trial_id, "median", ["val_accuracy"])
    assert report(20, 2, {"val_accuracy": 0.95}) is None
    assert study.trials[3].intermediate_values == {1: 0.5, 2: 0.5}  # in the shared storage


@pytest.mark.slow
def test_trials_never_read_the_test_split_and_the_best_is_scored_on_test_once(
    negated_reviews, monkeypatch
):
    from zoo.data.datasets import LoadedDataset
    from zoo.tuning import report

    reads, phase = [], ["trials"]
    original_split, original_test_once = LoadedDataset.split, report.test_once

    def watched_split(self, role):
        reads.append((phase[0], self.split_names.get(role, role), tuple(self.held_out)))
        return original_split(self, role)

    def watched_test_once(*args, **kwargs):
        phase[0] = "report"
        return original_test_once(*args, **kwargs)

    monkeypatch.setattr(LoadedDataset, "split", watched_split)
    monkeypatch.setattr(report, "test_once", watched_test_once)
    result = tiny_search(negated_reviews, trials=3, steps=30, eval_interval=10)
    during = [r for r in reads if r[0] == "trials"]
    assert during and all(split != "test" for _, split, _ in during), during
    assert all(held == ("test",) for _, _, held in during)
    assert any(r[1] == "test" for r in reads if r[0] == "report")  # read once trials are done
    with Store() as store:
        rows = store.rows()
    trials = [r for r in rows if (r.get("config") or {}).get("tune")]
    assert sorted(r["config"]["tune"]["trial"] for r in trials) == [0, 1, 2]
    assert all(r["status"] == "finished" for r in trials)
    assert not any(k.startswith("test_") for r in trials for k in r["metrics"])
    evals = [r for r in rows if r["kind"] == "eval"]
    best = result.studies[0]["best"]
    assert [e["parent_id"] for e in evals] == [best["run_id"]]  # the best trial, on test, once
    assert result.studies[0]["best_test"] is not None
    assert len(result.studies[0]["tuned"]) == 1 and len(result.studies[0]["preset"]) == 1
    assert "[models.fasttext-wordpunct-tuned.set]" in result.presets
    assert "buckets = 97\n" in result.presets  # typed, not the --set string


def _store_statuses(path) -> list[str]:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            return [row[0] for row in conn.execute("SELECT status FROM runs")]
    except sqlite3.Error:
        return []


@pytest.mark.slow
def test_a_killed_tune_continues_its_study_without_losing_or_double_counting_trials(
    negated_reviews, tmp_path
):
    command = [
        sys.executable,
        "-m",
        "zoo",
        "tune",
        "fasttext-wordpunct",
        "--on",
        str(negated_reviews),
        "--space",
        "lr=log(1e-3,1e-1)",
        "--trials",
        4,
        "--seeds",
        1,
        "--steps",
        400,
        "--pruner",
        "none",
        "--device",
        "cpu",
        *TINY,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    first = subprocess.Popen(
        [str(c) for c in command],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    store = home() / "zoo.db"
    deadline = time.time() + 240
    while time.time() < deadline:  # one trial finished and the next one training
        statuses = _store_statuses(store)
        if statuses.count("finished") >= 1 and "running" in statuses:
            break
        time.sleep(0.05)
    else:
        first.kill()
        pytest.fail("no trial finished in time: " + first.stderr.read()[-2000:])
    first.send_signal(signal.SIGKILL)
    first.wait()

    second = subprocess.run(
        [str(c) for c in command], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert "was cut off (its process died); its settings are queued again" in second.stderr
    storage = f"sqlite:///{home() / 'tune' / 'studies.db'}"
    (summary,) = optuna.get_all_study_summaries(storage)
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    lost = [t for t in study.trials if t.system_attrs.get("zoo_lost")]
    kept = [t for t in study.trials if not t.system_attrs.get("zoo_lost")]
    assert len(lost) == 1 and lost[0].state.name == "FAIL"
    assert [t.state.name for t in kept] == ["COMPLETE"] * 4  # no trial lost, none counted twice
    retry = [t for t in kept if t.user_attrs.get("retry_of") == lost[0].number]
    assert len(retry) == 1 and retry[0].params == lost[0].params  # its settings ran again
    with Store() as zoo_store:
        rows = [r for r in zoo_store.rows() if (r.get("config") or {}).get("tune")]
    finished = sorted(r["config"]["tune"]["trial"] for r in rows if r["status"] == "finished")
    assert finished == sorted(t.number for t in kept)
    assert [r["status"] for r in rows].count("interrupted") == 1  # the cut-off trial's run


@pytest.mark.slow
def test_a_ray_search_records_every_trial_from_the_driver_and_goes_on_past_a_killed_worker(
    negated_reviews, monkeypatch, tmp_path
):
    from conftest import kill_a_worker_held_at_a_checkpoint, start_local_ray

    ray = pytest.importorskip("ray")
    start_local_ray(ray)
    try:
        # The first two trials wait after their first checkpoint: one is killed mid-trial.
        thread, killed = kill_a_worker_held_at_a_checkpoint(monkeypatch, tmp_path, workers=2)
        result = tune_cli(
            negated_reviews,
            "--trials",
            4,
            "--seeds",
            1,
            "--steps",
            60,
            "--set",
            "checkpoint_every=10",
            "--executor",
            "ray",
            "--device",
            "cpu",
        )
        thread.join()
    finally:
        ray.shutdown()
    assert killed, "no Ray worker was killed"
    assert result.code == 0, result
    assert "trials run on Ray tasks on a local Ray cluster: 2 at a time" in result.err
    with Store() as store:
        rows = [r for r in store.rows() if (r.get("config") or {}).get("tune")]
    assert len(rows) == 4  # one row per trial
    assert {r["pid"] for r in rows} == {os.getpid()}  # every row written by the driver
    assert sorted(r["status"] for r in rows) == ["failed", "finished", "finished", "finished"]
    assert next(r for r in rows if r["status"] == "failed")["error"].startswith("Ray task lost")
    storage = f"sqlite:///{home() / 'tune' / 'studies.db'}"
    (summary,) = optuna.get_all_study_summaries(storage)
    states = sorted(
        t.state.name
        for t in optuna.load_study(study_name=summary.study_name, storage=storage).trials
    )
    assert states == ["COMPLETE", "COMPLETE", "COMPLETE", "FAIL"]


@pytest.mark.slow
def test_a_time_budget_starts_no_trial_once_the_trial_time_is_spent(negated_reviews):
    result = tiny_search(negated_reviews, time=0.001, steps=10, eval_interval=5)
    assert result.studies[0]["trials"] == {"COMPLETE": 1}
    assert result.studies[0]["trial_seconds"] > 0.001
    assert "0.001s of trials per model" in result.table
    import optuna

    from zoo.tuning import report
    from zoo.tuning.study import default_storage

    # each study keeps its row: the table is shown again (zoo ui) without training anything
    summaries = optuna.get_all_study_summaries(default_storage())
    kept = [s.user_attrs[report.EQUAL_BUDGET] for s in summaries]
    assert [t["table"] for t in report.kept_tables(kept)] == [result.table]


@pytest.mark.slow
def test_jobs_2_runs_trials_in_workers_and_only_the_driver_writes_the_store(negated_reviews):
    result = tune_cli(
        negated_reviews,
        "--trials",
        3,
        "--seeds",
        1,
        "--steps",
        30,
        "--jobs",
        2,
        "--device",
        "cpu",
    )
    assert result.code == 0, result
    assert "trials run on 2 worker processes" in result.err
    with Store() as store:
        rows = [r for r in store.rows() if (r.get("config") or {}).get("tune")]
    assert sorted(r["config"]["tune"]["trial"] for r in rows) == [0, 1, 2]
    assert {r["pid"] for r in rows} == {os.getpid()}
    assert len({r["host"] for r in rows}) == 1


def test_ctrl_c_keeps_the_study_and_queues_the_cut_off_trial_again(negated_reviews, monkeypatch):
    from conftest import press_ctrl_c

    from zoo.train import runner

    def interrupted(*args, **kwargs):
        press_ctrl_c()

    monkeypatch.setattr(runner, "execute", interrupted)
    result = tune_cli(
        negated_reviews,
        "--trials",
        2,
    )
    assert result.code == 130, result
    assert "run the same zoo tune again to continue" in result.err
    storage = f"sqlite:///{home() / 'tune' / 'studies.db'}"
    (summary,) = optuna.get_all_study_summaries(storage)
    trials = optuna.load_study(study_name=summary.study_name, storage=storage).trials
    assert [(t.state.name, bool(t.system_attrs.get("zoo_lost"))) for t in trials] == [
        ("FAIL", True),
        ("WAITING", False),
    ]
    assert trials[1].system_attrs["fixed_params"] == trials[0].params  # queued again


@pytest.mark.slow
def test_ctrl_c_in_the_reruns_stops_the_tune_even_when_it_lands_in_a_finalizer(
    negated_reviews, monkeypatch
):
    """A Ctrl-C handled while Python runs a finalizer (as a garbage collection between
    re-runs does) is not dropped: the re-runs stop, exit 130, nothing left running."""
    from conftest import press_ctrl_c

    from zoo.sweeps import cells

    class PressesCtrlCWhenDropped:
        def __del__(self):
            press_ctrl_c()

    train_cell = cells.train_cell

    def dropping_then_training(*args, **kwargs):
        PressesCtrlCWhenDropped()
        return train_cell(*args, **kwargs)

    monkeypatch.setattr(cells, "train_cell", dropping_then_training)
    result = tune_cli(negated_reviews, "--trials", 1, "--seeds", 2, "--steps", 30)
    assert result.code == 130, result
    assert result.err.splitlines()[-1] == (
        "zoo: interrupted; the studies and trials are kept; run the same zoo tune again to continue"
    ), result.err
    with Store() as store:
        rows = store.rows()
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    trials = [r for r in rows if (r.get("config") or {}).get("tune")]
    reruns = [r for r in rows if r["kind"] != "eval" and not (r.get("config") or {}).get("tune")]
    assert [r["status"] for r in trials] == ["finished"]
    assert [r["status"] for r in reruns] in ([], ["interrupted"])  # the first, resumable


@pytest.mark.slow
def test_a_config_file_holds_what_the_command_line_holds(negated_reviews, tmp_path):
    config = tmp_path / "tune.toml"
    config.write_text(
        f'''models = ["fasttext-wordpunct"]
on = ["{negated_reviews}"]
trials = 2
seeds = 1
steps = 20
sampler_seed = 3
[space]
lr = "log(1e-3,1e-1)"
[set]
dim = 8
buckets = 97
batch_size = 8
eval_interval = 10
''',
        encoding="utf-8",
    )
    from_file = run_cli("tune", "--config", config, "--json", "--device", "cpu")
    assert from_file.code == 0, from_file
    (study,) = json.loads(from_file.out)["studies"]
    assert study["trials"] == {"COMPLETE": 2}
    line = run_cli(
        "tune",
        "fasttext-wordpunct",
        "--on",
        negated_reviews,
        "--space",
        "lr=log(1e-3,1e-1)",
        "--trials",
        2,
        "--seeds",
        1,
        "--steps",
        20,
        "--sampler-seed",
        3,
        "--set",
        "dim=8",
        "--set",
        "buckets=97",
        "--set",
        "batch_size=8",
        "--set",
        "eval_interval=10",
        "--json",
        "--device",
        "cpu",
    )
    assert line.code == 0, line
    (same,) = json.loads(line.out)["studies"]
    assert same["study"] == study["study"]  # the same search: the study is continued
    assert same["best"] == study["best"] and same["trials"] == {"COMPLETE": 2}


def test_a_config_file_with_an_unknown_key_exits_2_with_a_did_you_mean(tmp_path):
    config = tmp_path / "tune.toml"
    config.write_text('models = ["fasttext-wordpunct"]\ntrails = 3\n', encoding="utf-8")
    result = run_cli("tune", "--config", config)
    assert result.code == 2 and "'trails'. Did you mean: trials" in result.err, result


@pytest.mark.parametrize(
    "model, task, settings",
    [
        ("fasttext-wordpunct", None, {"dim": 8, "buckets": 97, "batch_size": 8}),
        (
            "decoder-char",
            None,
            {
                "n_layer": 1,
                "n_head": 2,
                "n_embd": 16,
                "block_size": 16,
                "batch_size": 4,
                "sample_tokens": 5,
            },
        ),
        (
            "encoder-char",
            "masked-language-modeling",
            {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16, "batch_size": 4},
        ),
        ("digits-char", None, {"batch_size": 4}),
    ],
)
def test_each_task_trains_and_reports_with_the_test_split_held_out(
    model, task, settings, negated_reviews, tiny_text
):
    from zoo.train.job import RunOptions
    from zoo.train.plan import PlanChoices, plan_run
    from zoo.train.runner import execute

    dataset = {"fasttext-wordpunct": negated_reviews, "digits-char": "digits"}.get(model, tiny_text)
    plan = plan_run(
        model,
        str(dataset),
        choices=PlanChoices(task=task, held_out=("test",)),
        overrides={**settings, "steps": 4, "eval_interval": 2, "warmup_steps": 0},
    )
    result = execute(plan, RunOptions(device="cpu", quiet=True))
    assert result["status"] == "finished"
    assert any(k.startswith("val_") for k in result["metrics"])
    assert not any(k.startswith("test_") for k in result["metrics"]), result["metrics"]


def _study_result(tuned, preset, seeds=(1, 2, 3), **fields):
    from zoo.tuning.report import StudyResult

    result = StudyResult(
        "m-word", "reviews", "s", "val_accuracy", "test_accuracy", {"COMPLETE": 3}, 1.0
    )
    result.best = {"trial": 0, "value": 0.8, "params": {"lr": 0.01}, "run_id": "r"}
    result.settings = {"lr": 0.01}
    result.tuned, result.preset = list(tuned), list(preset)
    result.tuned_seeds = result.preset_seeds = list(seeds)
    for key, value in fields.items():
        setattr(result, key, value)
    return result


def test_the_tune_table_prints_tuned_minus_preset_paired_by_seed_with_its_t_interval():
    from zoo.tuning.report import table

    # differences 0.01, 0.02, 0.03: mean 0.02, sd 0.01, t(0.975, 2) = 4.302653:
    # 0.02 ± 4.302653 * 0.01 / sqrt(3) = [-0.00484, 0.04484]
    result = _study_result([0.71, 0.62, 0.83], [0.70, 0.60, 0.80])
    text = table([result], "3 trials")
    line = next(x for x in text.splitlines() if x.startswith("m-word"))
    assert "+0.0200 [-0.0048, 0.0448]" in line and "†" not in line
    assert "(n=3)" in line
    assert result.record()["paired"]["ci_low"] == pytest.approx(-0.004841, abs=1e-6)
    clear = _study_result([0.71, 0.61, 0.81], [0.70, 0.60, 0.80])  # +0.01 on every seed
    assert "(the same difference at every seed: no test)" in table([clear], "3 trials")
    # 154/2000 better at every seed, which the subtractions round apart by about 1e-17
    rounded = _study_result([0.2045, 0.2365, 0.2200], [0.1275, 0.1595, 0.1430])
    line = next(x for x in table([rounded], "3").splitlines() if x.startswith("m-word"))
    assert "+0.0770 (the same difference at every seed: no test)" in line and "†" not in line
    assert result.record()["paired"]["df"] == 2
    lift = _study_result([0.75, 0.66, 0.84], [0.70, 0.60, 0.80])
    assert "†" in next(x for x in table([lift], "3").splitlines() if x.startswith("m-word"))
    same = _study_result([0.7, 0.6, 0.8], [0.7, 0.6, 0.8], same_as_preset=True)
    assert "0 (the preset's settings)" in table([same], "3 trials")
    assert "never a trial's seed" in text


def test_the_tune_table_names_each_rows_figures_when_rows_differ_in_them():
    from zoo.tuning.report import table

    one = _study_result([0.71, 0.62], [0.70, 0.60], seeds=(1, 2))
    assert "chosen on val_accuracy, reported as test_accuracy" in table([one], "3")
    lm = _study_result([4.1, 4.2], [4.3, 4.4], seeds=(1, 2), objective="val_bpc")
    lm.test_metric, lm.dataset = "test_bpc", "shakespeare"
    text = table([one, lm], "3")
    assert "reported as test, per row" in text and "chosen on / reported as" in text
    assert "val_bpc / test_bpc" in next(x for x in text.splitlines() if "shakespeare" in x)


def test_a_search_reports_its_tasks_headline_on_the_test_split():
    from zoo.tuning.search import test_figure

    assert test_figure("language-modeling") == "test_bpc"  # its headline is val_bpc
    assert test_figure("classification") == "test_accuracy"


def test_reruns_are_on_seeds_other_than_the_trials():
    from zoo.tuning.trials import TRIAL_SEED, rerun_seeds

    assert TRIAL_SEED not in rerun_seeds(5) and len(set(rerun_seeds(5))) == 5


@pytest.mark.slow
def test_best_settings_equal_to_the_preset_are_one_set_of_runs_counted_once(negated_reviews):
    # both choices are the preset's own learning rate, written two ways: tuned == preset
    from zoo.core.loading import get_zoo
    from zoo.core.names import resolve_model

    lr = float(resolve_model("fasttext-wordpunct", get_zoo()).overrides["lr"])
    space = f"lr=choice({lr!r},{lr:.6e})"
    result = tiny_search(negated_reviews, trials=1, steps=5, seeds=3, space=space)
    (study,) = result.studies
    assert study["same_as_preset"] and study["tuned_seeds"] == [1, 2, 3]
    assert len(study["tuned"]) == 3 and len(study["preset"]) == 3
    line = next(x for x in result.table.splitlines() if x.startswith("fasttext"))
    assert line.count("(n=3)") == 2 and "(n=6)" not in line, line
    with Store() as store:
        rows = [r for r in store.rows() if r["kind"] == "train"]
    trials = [r for r in rows if (r.get("config") or {}).get("tune")]
    reruns = [r for r in rows if not (r.get("config") or {}).get("tune")]
    assert [r["seed"] for r in trials] == [0]
    assert sorted(r["seed"] for r in reruns) == [1, 2, 3]  # 3 runs, not 6; never seed 0


def _draws(storage, count, sampler="tpe"):
    """Continue (or start) a seeded study of two floats in `storage` up to `count` trials,
    as zoo.tuning.trials asks them; returns every trial's settings."""
    from zoo.tuning.study import make_sampler, seed_next_draw

    study = optuna.create_study(
        study_name="s", storage=storage, load_if_exists=True, sampler=make_sampler(sampler, 0)
    )
    space = {
        "lr": optuna.distributions.FloatDistribution(1e-3, 3e-2, log=True),
        "dropout": optuna.distributions.FloatDistribution(0, 0.5),
    }
    while len(study.trials) < count:
        seed_next_draw(study, sampler, 0)
        trial = study.ask(space)
        study.tell(trial, trial.params["lr"])
    return [tuple(sorted(t.params.items())) for t in study.trials]


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_a_seeded_study_continued_from_3_to_5_trials_draws_5_distinct_settings(tmp_path, sampler):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    continued = f"sqlite:///{tmp_path / 'continued.db'}"
    _draws(continued, 3, sampler)
    resumed = _draws(continued, 5, sampler)
    assert len(set(resumed)) == 5, resumed
    assert resumed == _draws(f"sqlite:///{tmp_path / 'one-go.db'}", 5, sampler)  # repeatable


@pytest.mark.slow
def test_a_resumed_tune_trains_5_distinct_settings_and_never_retrains_a_drawn_point(
    negated_reviews,
):
    tiny_search(negated_reviews, trials=3, steps=5, sampler_seed=0)
    tiny_search(negated_reviews, trials=5, steps=5, sampler_seed=0)
    with Store() as store:
        trials = [r for r in store.rows() if (r.get("config") or {}).get("tune")]
    lrs = [r["config"]["configs"]["train"]["lr"] for r in trials]
    assert len(trials) == 5 and len(set(lrs)) == 5, lrs


def test_a_trial_drawing_an_earlier_trials_settings_is_told_its_outcome_untrained(
    negated_reviews, monkeypatch
):
    from zoo.train import runner

    trained = []

    def fake_execute(plan, options, **kwargs):
        trained.append(plan.configs["train"].lr)
        return {"status": "finished", "metrics": {"val_accuracy": 0.5 + plan.configs["train"].lr}}

    monkeypatch.setattr(runner, "execute", fake_execute)
    monkeypatch.setattr("zoo.tuning.search._seed_reruns", lambda *args: None)
    monkeypatch.setattr("zoo.tuning.report.test_once", lambda *args: None)
    monkeypatch.setattr("zoo.tuning.report.save_plots", lambda *args: [])
    result = run_cli(
        "tune",
        "fasttext-wordpunct",
        "--on",
        negated_reviews,
        "--space",
        "lr=choice(0.01,0.02)",
        "--trials",
        6,
        "--sampler",
        "random",
        "--sampler-seed",
        0,
        "--steps",
        2,
        *TINY,
    )
    assert result.code == 0, result
    assert sorted(trained) == [0.01, 0.02], trained  # 6 trials, each setting trained once
    assert result.err.count("nothing trained") == 4


def test_no_module_of_zoo_shadows_a_function_of_its_api():
    """Importing a submodule sets it as an attribute of its package: a module named like an
    API function (zoo/tune/) would replace zoo.tune once a search had run."""
    from pathlib import Path

    import zoo
    import zoo.tuning.search  # noqa: F401 (what zoo.tune imports when it runs)

    folder = Path(zoo.__file__).parent
    modules = {p.stem for p in folder.glob("*.py")} | {
        p.name for p in folder.iterdir() if p.is_dir()
    }
    assert not modules & set(zoo.__all__) - {"ZooError"}, modules & set(zoo.__all__)
    assert callable(zoo.tune) and zoo.tune.__module__.startswith("zoo.api")
