"""The digits acceptance figures: `zoo run digits-char digits` end to end, and predictions.

    .venv/bin/python benchmarks/bench_digits.py [--seeds 0 1 2] [--also] [--threads N]
    .venv/bin/python benchmarks/bench_digits.py --step-time

For each seed it runs `zoo run digits-char digits --json --quiet --seed S` in a fresh
process (a real command anyone can repeat) and prints the wall time from process start to
exit, test and heldout accuracy with their per-family figures, then `zoo predict` on
"1 2 3", "7 8 9" and "2 4 6" (expected 4, 0 and 8). With `--also` it then runs
`zoo run decoder-char digits` and `zoo run digits-char shakespeare` once each and prints
their accuracy. `--threads N` sets OMP_NUM_THREADS for the child processes (torch's default
is one thread per core). The load average is printed before and after: other work on the
machine slows every figure here. `--step-time` instead times one training step of the
preset's network (batch 64 and 256) with 1 and with 2 torch threads, in this process.

Targets (issue 17), with the default preset: wall time <= 120 s, test_accuracy 100% and
heldout_accuracy (rules never seen in training) >= 95%. The CPU time of the run is printed
too: on a shared machine it, not the wall time, is the model's own cost.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import table, write_results  # noqa: E402

EXPECTED = {"1 2 3": "4", "7 8 9": "0", "2 4 6": "8"}
TARGET_SECONDS, TARGET_ACCURACY, TARGET_HELDOUT = 120.0, 1.0, 0.95


def zoo(*args, env) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "zoo", *map(str, args)], capture_output=True, text=True, env=env
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"zoo {' '.join(map(str, args))} failed: {done.stderr.strip()[-500:]}")
    return seconds, done


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run(model: str, dataset: str, seed: int, env) -> tuple[float, dict]:
    seconds, done = zoo("run", model, dataset, "--json", "--quiet", "--seed", seed, env=env)
    return seconds, json.loads(done.stdout)


def cpu_seconds() -> float:
    """User + system CPU time of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def families(metrics: dict, split: str) -> str:
    """'arithmetic 1.0000, ...' from test_arithmetic_accuracy and its kind."""
    from zoo.plugins.digits.data import FAMILIES

    found = {
        family: metrics[f"{split}_{family}_accuracy"]
        for family in FAMILIES
        if f"{split}_{family}_accuracy" in metrics
    }
    return ", ".join(f"{name} {value:.4f}" for name, value in sorted(found.items()))


def step_time() -> None:
    """Milliseconds per TorchModel.train_step of the preset network, by batch and threads."""
    import numpy as np
    import torch
    from zoo.plugins.digits import DigitsConfig
    from zoo.plugins.digits.model import build

    from zoo.core.loading import task_loss
    from zoo.core.names import get_task
    from zoo.train.model import TaskSpec
    from zoo.train.torch_model import TorchModel

    rng = np.random.default_rng(0)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for batch in (64, 256):
            model = TorchModel(
                build(DigitsConfig(ff_ratio=2), TaskSpec("next-item", 14)),
                loss=task_loss(get_task("next-item")),
            )
            model.configure_optimizer(1e-3, 0.1)
            x = rng.integers(3, 14, size=(batch, 15))
            y = rng.integers(3, 14, size=batch)
            for _ in range(5):
                model.train_step(x, y, 1e-3)
            start = time.perf_counter()
            for _ in range(30):
                model.train_step(x, y, 1e-3)
            print(
                f"threads {threads}, batch {batch}: "
                f"{(time.perf_counter() - start) / 30 * 1000:.1f} ms per step; load average {load()}"
            )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--also",
        action="store_true",
        help="also run decoder-char on digits and digits-char on shakespeare",
    )
    parser.add_argument("--threads", type=int, help="OMP_NUM_THREADS for the runs")
    parser.add_argument(
        "--step-time",
        action="store_true",
        help="only time training steps with 1 and 2 torch threads",
    )
    args = parser.parse_args(argv)
    if args.step_time:
        step_time()
        return 0

    env = dict(os.environ)
    env.setdefault("ZOO_HOME", tempfile.mkdtemp(prefix="bench-digits-"))
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    print(
        f"runs in {env['ZOO_HOME']}; OMP_NUM_THREADS={env.get('OMP_NUM_THREADS', 'unset')}; "
        f"load average {load()}"
    )
    ok = True
    rows = []
    for seed in args.seeds:
        cpu = cpu_seconds()
        seconds, result = run("digits-char", "digits", seed, env)
        cpu = cpu_seconds() - cpu
        m = result["metrics"]
        print(
            f"\ndigits-char digits --seed {seed}: {seconds:.1f} s wall, {cpu:.1f} s CPU (train "
            f"{m['train_time']:.1f} s, {m['steps']} steps, best_step {m.get('best_step')}, "
            f"{result['params']:,} parameters)"
        )
        print(f"  test_accuracy    {m['test_accuracy']:.4f}  ({families(m, 'test')})")
        print(f"  heldout_accuracy {m['heldout_accuracy']:.4f}  ({families(m, 'heldout')})")
        answers = []
        for context, expected in EXPECTED.items():
            _, done = zoo("predict", result["run_id"], context, "--json", env=env)
            answer = json.loads(done.stdout)
            answers.append(answer["label"] == expected)
            print(
                f"  predict {context!r} -> {answer['label']} ({answer['probability']:.3f}); "
                f"expected {expected}"
            )
        rows.append(
            {
                "seed": seed,
                "wall_s": seconds,
                "cpu_s": cpu,
                "test": m["test_accuracy"],
                "heldout": m["heldout_accuracy"],
            }
        )
        met = (
            seconds <= TARGET_SECONDS
            and m["test_accuracy"] >= TARGET_ACCURACY
            and m["heldout_accuracy"] >= TARGET_HELDOUT
            and all(answers)
        )
        ok = ok and met
        print(
            f"  targets (<= {TARGET_SECONDS:.0f} s, test {TARGET_ACCURACY:.0%}, heldout >= "
            f"{TARGET_HELDOUT:.0%}, predictions): "
            f"{'met' if met else 'NOT met'}; load average {load()}"
        )
    threads = env.get("OMP_NUM_THREADS", "torch's default")
    write_results(
        "digits",
        title="digits-char end to end",
        about=f"`zoo run digits-char digits --seed S` from launch to exit, threads: {threads}, "
        "one seed after another.",
        tables=[
            table(
                "",
                [
                    ("seed", "seed"),
                    ("wall_s", "wall s", ".1f"),
                    ("cpu_s", "CPU s", ".1f"),
                    ("test", "test_accuracy", ".4f"),
                    ("heldout", "heldout_accuracy", ".4f"),
                ],
                rows,
            )
        ],
    )
    if args.also:
        for model, dataset in (("decoder-char", "digits"), ("digits-char", "shakespeare")):
            seconds, result = run(model, dataset, 0, env)
            m = result["metrics"]
            extra = (
                f", heldout_accuracy {m['heldout_accuracy']:.4f}" if "heldout_accuracy" in m else ""
            )
            print(
                f"\n{model} {dataset}: {seconds:.1f} s wall, {m['steps']} steps, "
                f"test_accuracy {m['test_accuracy']:.4f}{extra}, test_loss {m['test_loss']:.4f}; "
                f"load average {load()}"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
