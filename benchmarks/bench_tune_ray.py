"""How `zoo tune --executor ray` runs trials: Ray Tune (its Optuna searcher and ASHA
scheduler) against Optuna's distributed mode (a shared study storage, trials as plain Ray
tasks that report to it), on a local Ray cluster, with trials that only sleep and report:
the time each design adds around the trials themselves.

    python benchmarks/bench_tune_ray.py --trials 8 --cpus 2
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import header, load, table, write_results

REPORTS, PAUSE = 4, 0.25  # each trial: 4 validations, 0.25 s apart (1 s of "training")


def ray_tune(trials: int, cpus: int, folder: str) -> float:
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.optuna import OptunaSearch

    def trainable(config):
        for step in range(1, REPORTS + 1):
            time.sleep(PAUSE)
            tune.report({"val_accuracy": 1 - config["lr"] / step})

    began = time.perf_counter()
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        param_space={"lr": tune.loguniform(1e-4, 1e-2)},
        tune_config=tune.TuneConfig(
            search_alg=OptunaSearch(metric="val_accuracy", mode="max"),
            scheduler=ASHAScheduler(metric="val_accuracy", mode="max"),
            num_samples=trials,
            max_concurrent_trials=cpus,
        ),
        run_config=tune.RunConfig(storage_path=folder, verbose=0),
    )
    tuner.fit()
    return time.perf_counter() - began


def optuna_tasks(trials: int, cpus: int, folder: str) -> float:
    import optuna
    import ray

    storage = f"sqlite:///{folder}/studies.db"

    @ray.remote(num_cpus=1)
    def trial_task(trial_id: int) -> float:
        study = optuna.load_study(study_name="s", storage=storage)
        trial = optuna.Trial(study, trial_id)
        lr = trial.params["lr"]
        for step in range(1, REPORTS + 1):
            time.sleep(PAUSE)
            trial.report(1 - lr / step, step)
            if trial.should_prune():
                return float("nan")
        return 1 - lr / REPORTS

    began = time.perf_counter()
    study = optuna.create_study(
        study_name="s",
        storage=storage,
        direction="maximize",
        pruner=optuna.pruners.SuccessiveHalvingPruner(),
    )
    distributions = {"lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)}
    running, asked = {}, 0
    while asked < trials or running:
        while asked < trials and len(running) < cpus:
            trial = study.ask(distributions)
            running[trial_task.remote(trial._trial_id)] = trial
            asked += 1
        (done,), _ = ray.wait(list(running), num_returns=1)
        trial, value = running.pop(done), ray.get(done)
        if math.isnan(value):  # pruned
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, value)
    return time.perf_counter() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    header("zoo tune on Ray: Ray Tune against Optuna over a shared storage")
    import optuna
    import ray

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ray.init(
        num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level="error"
    )
    floor = args.trials / args.cpus * REPORTS * PAUSE
    times = {"Ray Tune (OptunaSearch + ASHA)": [], "Optuna storage + Ray tasks": []}
    try:
        for _ in range(args.rounds):  # alternating
            times["Ray Tune (OptunaSearch + ASHA)"].append(
                ray_tune(args.trials, args.cpus, tempfile.mkdtemp(prefix="zoo-raytune-"))
            )
            times["Optuna storage + Ray tasks"].append(
                optuna_tasks(args.trials, args.cpus, tempfile.mkdtemp(prefix="zoo-optuna-"))
            )
            print({k: round(v[-1], 2) for k, v in times.items()}, load(), flush=True)
    finally:
        ray.shutdown()
    rows = [
        {"design": name, "wall_s": min(values), "overhead_s": min(values) - floor}
        for name, values in times.items()
    ]
    write_results(
        "tune_ray",
        title="Trials on Ray: Ray Tune against Optuna's shared storage",
        about=f"{args.trials} trials that each sleep {REPORTS} x {PAUSE}s and report "
        f"{REPORTS} validations, {args.cpus} at a time on a local Ray cluster of {args.cpus} "
        f"CPUs; the trials themselves need {floor:.1f}s. Best of {args.rounds} rounds.",
        tables=[
            table(
                "",
                [
                    ("design", "design"),
                    ("wall_s", "wall s", ".1f"),
                    ("overhead_s", "added s", ".1f"),
                ],
                rows,
            )
        ],
    )


if __name__ == "__main__":
    main()
