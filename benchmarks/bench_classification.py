"""Classification acceptance benchmark: the default presets, end to end, as a user runs them.

    .venv/bin/python benchmarks/bench_classification.py [--seeds 0 1] [--runs encoder-wordpunct:rotten_tomatoes ...]
                                                        [--set key=value ...]

Each case is `zoo run MODEL DATASET --seed S --json --quiet` in a fresh process (so the
wall time includes start-up, dataset loading, tokenizer training or its cache, training and
the final evaluation), in a throw-away ZOO_HOME unless --home is given. It prints test
accuracy, macro F1, validation accuracy, steps, wall and CPU time, the load average before
and after, and whether the case meets its target: test accuracy >= 80% on rotten_tomatoes
and >= 91% on emotion, within 300 s of wall time. The machine is often shared: compare the
CPU time with the wall time, and the load average with the number of cores, before reading
the wall time as this model's speed.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

TARGETS = {"rotten_tomatoes": 0.80, "emotion": 0.91}  # test accuracy (issue 17)
WALL_LIMIT = 300.0  # seconds
DEFAULT_RUNS = ["encoder-wordpunct:rotten_tomatoes", "encoder-wordpunct:emotion"]


def run_case(model: str, dataset: str, seed: int, home: str, overrides: list[str]) -> dict:
    command = [sys.executable, "-m", "zoo", "run", model, dataset, "--seed", str(seed),
               "--json", "--quiet"]
    for item in overrides:
        command += ["--set", item]
    env = {**os.environ, "ZOO_HOME": home}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"command": " ".join(command[2:]), "result": result, "wall": wall, "cpu": cpu,
            "load_before": load_before, "load_after": os.getloadavg()[0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=DEFAULT_RUNS, metavar="MODEL:DATASET")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra --set for every run (for tuning; the acceptance uses none)")
    parser.add_argument("--home", help="ZOO_HOME for the runs (default: a temporary folder)")
    args = parser.parse_args(argv)

    print(f"{os.cpu_count()} CPUs; torch threads: default unless OMP_NUM_THREADS is set "
          f"({os.environ.get('OMP_NUM_THREADS', 'unset')})")
    header = (f"{'model':<14}{'dataset':<17}{'seed':>4}{'test acc':>10}{'macro F1':>10}"
              f"{'val acc':>9}{'steps':>7}{'best':>6}{'wall s':>8}{'cpu s':>8}{'load':>12}  target")
    print(header)
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        home = args.home or scratch
        for case in args.runs:
            model, _, dataset = case.partition(":")
            for seed in args.seeds:
                out = run_case(model, dataset, seed, home, args.set)
                m = out["result"]["metrics"]
                target = TARGETS.get(dataset)
                ok = out["wall"] <= WALL_LIMIT and (target is None or m["test_accuracy"] >= target)
                failed |= not ok
                goal = f">= {target:.0%} in {WALL_LIMIT:.0f} s" if target else f"<= {WALL_LIMIT:.0f} s"
                print(f"{model:<14}{dataset:<17}{seed:>4}{m['test_accuracy']:>10.4f}"
                      f"{m['test_macro_f1']:>10.4f}{m['val_accuracy']:>9.4f}{m['steps']:>7}{m['best_step']:>6}"
                      f"{out['wall']:>8.1f}{out['cpu']:>8.1f}"
                      f"{out['load_before']:>6.1f}/{out['load_after']:<5.1f}"
                      f"  {goal}: {'met' if ok else 'MISSED'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
