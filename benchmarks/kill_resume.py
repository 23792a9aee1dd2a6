"""Kill-and-resume at preset size: a run of MODEL on DATASET killed with SIGKILL at a random
step and resumed with `zoo resume` ends bit-identical to the same run uninterrupted.

    .venv/bin/python benchmarks/kill_resume.py [--model decoder-char --dataset shakespeare
        --steps 60 --every 20 --trials 2]

Prints, per trial, the kill step, the checkpoint resumed from, whether the weights and the
non-timing metrics are identical, and the wall time of each phase.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMING = {"train_time", "tokens_per_s"}


def zoo(home: Path, *args, popen=False):
    env = {**os.environ, "ZOO_HOME": str(home)}
    cmd = [sys.executable, "-m", "zoo", *map(str, args)]
    if popen:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"zoo {' '.join(map(str, args))} failed: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="decoder-char")
    parser.add_argument("--dataset", default="shakespeare")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--every", type=int, default=20, help="checkpoint_every")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from zoo.train import checkpoints

    run_args = ["run", args.model, args.dataset, "--steps", args.steps, "--seed", args.seed,
                "--json", "--quiet", "--set", f"checkpoint_every={args.every}"]
    rng = random.Random()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        reference = zoo(Path(tmp) / "reference", *run_args)
        print(f"uninterrupted run: {time.perf_counter() - start:.1f} s")
        ref_weights = (Path(tmp) / "reference" / reference["run_id"] / "model.safetensors").read_bytes()
        for trial in range(args.trials):
            home = Path(tmp) / f"trial{trial}"
            kill_at = rng.randint(1, args.steps - 1)
            start = time.perf_counter()
            proc = zoo(home, *run_args, popen=True)
            while proc.poll() is None:
                logs = list(home.glob("*/metrics.jsonl"))
                if logs and logs[0].read_bytes().count(b"\n") >= kill_at:
                    proc.send_signal(signal.SIGKILL)
                    break
                time.sleep(0.005)
            code = proc.wait()
            killed = time.perf_counter() - start
            (run_dir,) = [p for p in home.iterdir() if (p / "config.json").is_file()]
            newest = checkpoints.latest(run_dir) if code < 0 else None
            start = time.perf_counter()
            done = zoo(home, "resume", run_dir.name, "--json", "--quiet") if code < 0 else None
            resumed = time.perf_counter() - start
            if done is None:
                print(f"trial {trial}: the run ended (code {code}) before step {kill_at}")
                continue
            same_weights = (run_dir / "model.safetensors").read_bytes() == ref_weights
            differing = sorted(k for k, v in reference["metrics"].items()
                               if k not in TIMING and done["metrics"].get(k) != v)
            print(f"trial {trial}: killed at step {kill_at} after {killed:.1f} s; newest "
                  f"checkpoint {f'step {newest.step}' if newest else 'none'}; resumed in {resumed:.1f} s; "
                  f"weights identical: {same_weights}; metrics differing: {differing or 'none'}")


if __name__ == "__main__":
    main()
