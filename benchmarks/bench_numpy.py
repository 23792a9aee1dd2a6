"""The NumPy reference next to the torch decoder, in one script run.

1. `numpy-char` and `decoder-char` train on Tiny Shakespeare through the real pipeline with
   the same config and seed; their loss curves are printed side by side.
2. `zoo verify` checks the fresh decoder-char run against the NumPy reference.
3. The initial loss of both at the decoder-char config over seeds 0..9 (same batch), and
   both trained from the same initial weights on the same batches.
4. Training speed: train_step of both models at the decoder-char config on identical
   batches, interleaved step by step so that load from other processes hits both alike;
   medians per step and the torch/NumPy ratio.

    python benchmarks/bench_numpy.py [--steps 200] [--seed 0] [--threads N] [--speed-steps 30]

Runs go to ZOO_HOME (default ./runs) like any `zoo run`. --threads sets the BLAS and torch
thread counts (both frameworks get the same), before NumPy or torch is imported.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

MODELS = ("numpy-char", "decoder-char")


def lm_loss():
    """The language-modeling task's loss, which a TorchModel trains and evaluates with."""
    from zoo.core.loading import task_loss
    from zoo.core.names import get_task

    return task_loss(get_task("language-modeling"))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=200, help="training steps of each run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-interval", type=int, default=50)
    parser.add_argument("--threads", type=int, default=None, help="BLAS / torch threads")
    parser.add_argument("--speed-steps", type=int, default=30, help="timed steps per model")
    parser.add_argument("--skip-runs", action="store_true", help="only the speed comparison")
    return parser.parse_args()


def pipeline_runs(args) -> dict:
    from zoo.records.store import home
    from zoo.train.job import RunFolder, RunOptions
    from zoo.train.plan import PlanChoices, plan_run
    from zoo.train.runner import execute

    runs = {}
    for model in MODELS:
        plan = plan_run(
            model,
            "shakespeare",
            choices=PlanChoices(seed=args.seed),
            overrides={"train.steps": args.steps, "eval_interval": args.eval_interval},
        )
        result = execute(plan, RunOptions(device="cpu", quiet=True))
        curve = RunFolder(home() / result["run_id"]).curve()
        runs[model] = {"result": result, "curve": curve}
        m = result["metrics"]
        print(
            f"{model:<13} run {result['run_id']}  {result['params']:,} params  "
            f"train {m['train_time']:.1f} s  {m['tokens_per_s']:,.0f} tok/s  "
            f"val_loss {m['val_loss']:.4f}  test_loss {m['test_loss']:.4f}  "
            f"val_bpc {m['val_bpc']:.4f}",
            flush=True,
        )
    print()
    print("step  " + "  ".join(f"{m + ' train':>18} {m + ' val':>16}" for m in MODELS))
    by_step = {m: {r["step"]: r for r in runs[m]["curve"]} for m in MODELS}
    shown = sorted({1, *range(10, args.steps + 1, 10), args.steps})
    for step in shown:
        cells = []
        for m in MODELS:
            record = by_step[m].get(step, {})
            train = record.get("train_loss")
            val = record.get("val_loss")
            cells.append(f"{train:>18.4f}" if train is not None else f"{'':>18}")
            cells.append(f"{val:>16.4f}" if val is not None else f"{'':>16}")
        print(f"{step:>4}  " + "  ".join(f"{a} {b}" for a, b in zip(cells[::2], cells[1::2])))
    return runs


def run_verify(run_id: str) -> None:
    from zoo.plugins.numpy.verify import report, verify

    result = verify(run_id)
    print(report(result))
    print("verify:", "PASSED" if result.passed else "FAILED")


def shakespeare():
    """The char tokenizer trained on Tiny Shakespeare, and each split's token ids."""
    from zoo.pipelines.language_modeling import encode, split_text

    from zoo.core.loading import get_zoo
    from zoo.data import datasets

    zoo = get_zoo()
    dataset = datasets.load(datasets.resolve("shakespeare", zoo), zoo)
    entry = zoo.tokenizers.get("char")
    tokenizer = entry.load().train(
        dataset.split("train")[dataset.text_column], entry.config_class()()
    )
    ids = {role: encode(tokenizer, split_text(dataset, role)) for role in ("train", "validation")}
    return tokenizer, ids


def initial_losses(args, seeds: int = 10) -> None:
    """Initial validation loss of both frameworks over several seeds, on one fixed batch:
    the two draw from different generators, so a single seed's losses differ by chance."""
    import numpy as np
    import torch
    from zoo.pipelines.language_modeling import random_batch
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.model import build as build_torch
    from zoo.plugins.numpy import NumpyConfig
    from zoo.plugins.numpy.model import build as build_numpy

    from zoo.core.loading import get_zoo
    from zoo.train.model import TaskSpec
    from zoo.train.torch_model import TorchModel

    tokenizer, ids = shakespeare()
    preset = get_zoo().catalogue.models["decoder-char"].overrides
    shape = {k: preset[k] for k in ("n_layer", "n_head", "n_embd", "block_size", "dropout")}
    x, y = random_batch(ids["validation"], 64, preset["block_size"], np.random.default_rng(0))
    spec = TaskSpec("language-modeling", tokenizer.vocab_size)
    losses = {"numpy": [], "torch": []}
    for seed in range(seeds):
        np.random.seed(seed)  # what `zoo run --seed` does before building
        torch.manual_seed(seed)
        for name, model in (
            ("numpy", build_numpy(NumpyConfig(**shape), spec)),
            ("torch", TorchModel(build_torch(DecoderConfig(**shape), spec), loss=lm_loss())),
        ):
            nll, count = model.loss_sum(x, y)
            losses[name].append(nll / count)
    print(
        f"\ninitial loss on 64 validation windows, seeds 0..{seeds - 1} "
        f"(ln(vocab {tokenizer.vocab_size}) = {np.log(tokenizer.vocab_size):.4f})"
    )
    for name, values in losses.items():
        print(
            f"  {name:<6} mean {np.mean(values):.4f}  sd {np.std(values, ddof=1):.4f}  "
            f"min {min(values):.4f}  max {max(values):.4f}  seed 0: {values[0]:.4f}"
        )


def same_start(args) -> None:
    """Both models from the same initial weights on the same batches, outside the pipeline
    but with its schedule: how far float32 rounding lets the two trajectories drift."""
    import numpy as np
    import torch
    from zoo.pipelines.language_modeling import random_batch
    from zoo.plugins.decoder.model import build as build_torch
    from zoo.plugins.numpy import NumpyConfig
    from zoo.plugins.numpy.model import NumpyDecoder

    from zoo.train.loop import lr_at
    from zoo.train.model import TaskSpec
    from zoo.train.plan import PlanChoices, plan_run
    from zoo.train.torch_model import TorchModel

    tokenizer, ids = shakespeare()
    plan = plan_run(
        "decoder-char",
        "shakespeare",
        choices=PlanChoices(seed=args.seed),
        overrides={"train.steps": args.steps},
    )
    model_cfg, train = plan.configs["model"], plan.configs["train"]
    spec = TaskSpec("language-modeling", tokenizer.vocab_size)
    torch.manual_seed(args.seed)
    theirs = TorchModel(build_torch(model_cfg, spec), loss=lm_loss())
    ours = NumpyDecoder(NumpyConfig(**vars(model_cfg)), spec, seed=args.seed)
    ours.load_state_dict(theirs.state_dict())
    for model in (theirs, ours):
        model.configure_optimizer(train.lr, train.weight_decay)
    rng = np.random.default_rng(args.seed)
    losses = {"numpy": [], "torch": []}
    for step in range(train.steps):
        x, y = random_batch(ids["train"], train.batch_size, model_cfg.block_size, rng)
        lr = lr_at(step, train, train.steps)
        losses["torch"].append(theirs.train_step(x, y, lr, grad_clip=train.grad_clip))
        losses["numpy"].append(ours.train_step(x, y, lr, grad_clip=train.grad_clip))
    val_x, val_y = random_batch(
        ids["validation"], 64, model_cfg.block_size, np.random.default_rng(1)
    )
    drift = max(float(np.abs(p - theirs.state_dict()[k]).max()) for k, p in ours.params.items())
    print(
        f"\nsame initial weights (torch's, seed {args.seed}) and batches, the pipeline's schedule, "
        f"{train.steps} steps:"
    )
    shown = sorted({s for s in (1, 10, 50, 100, 150) if s < train.steps} | {train.steps})
    print("  step " + "".join(f"{s:>9}" for s in shown))
    for name, values in losses.items():
        print(f"  {name:<5}" + "".join(f"{values[s - 1]:9.4f}" for s in shown))
    diffs = np.abs(np.array(losses["numpy"]) - np.array(losses["torch"]))
    print(
        f"  |train loss difference|: step 1 {diffs[0]:.1e}, max over the first 10 steps "
        f"{diffs[:10].max():.1e}, over all steps {diffs.max():.1e}; largest weight difference "
        f"at the end {drift:.1e}"
    )
    val = {name: m.loss_sum(val_x, val_y) for name, m in (("numpy", ours), ("torch", theirs))}
    print(
        "  validation loss (64 windows) at the end: "
        + ", ".join(f"{n} {s / c:.4f}" for n, (s, c) in val.items())
    )


def speed(args) -> None:
    import numpy as np
    import torch
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder.model import build as build_torch
    from zoo.plugins.numpy import NumpyConfig
    from zoo.plugins.numpy.model import NumpyDecoder

    from zoo.core.loading import get_zoo
    from zoo.train.model import TaskSpec
    from zoo.train.torch_model import TorchModel

    preset = get_zoo().catalogue.models["decoder-char"].overrides
    shape = {k: preset[k] for k in ("n_layer", "n_head", "n_embd", "block_size", "dropout")}
    batch, block, vocab = (
        preset["batch_size"],
        preset["block_size"],
        68,
    )  # 65 characters + 3 specials
    spec = TaskSpec("language-modeling", vocab)
    torch.manual_seed(args.seed)
    models = {
        "torch float32": TorchModel(build_torch(DecoderConfig(**shape), spec), loss=lm_loss()),
        "numpy float32": NumpyDecoder(NumpyConfig(**shape), spec, seed=args.seed),
        "numpy float64": NumpyDecoder(NumpyConfig(**shape, dtype="float64"), spec, seed=args.seed),
    }
    for model in models.values():
        model.configure_optimizer(1e-3, 0.1)
    rng = np.random.default_rng(args.seed)
    batches = [
        (rng.integers(0, vocab, (batch, block)), rng.integers(0, vocab, (batch, block)))
        for _ in range(args.speed_steps + 2)
    ]
    times = {name: [] for name in models}
    for i, (x, y) in enumerate(batches):
        for name, model in models.items():  # interleaved: each step of each model in turn
            start = time.perf_counter()
            model.train_step(x, y, 1e-3)
            if i >= 2:  # the first steps warm up allocators and thread pools
                times[name].append(time.perf_counter() - start)
    tokens = batch * block
    print(
        f"\ntrain_step at the decoder-char config ({shape}, batch {batch} x {block} tokens), "
        f"{args.speed_steps} interleaved steps each, torch threads {torch.get_num_threads()}, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
    )
    base = statistics.median(times["torch float32"])
    rows = []
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"  {name:<14} median {median * 1e3:8.1f} ms/step  {tokens / median:9,.0f} tok/s  "
            f"{median / base:5.2f}x torch's step time"
        )
        rows.append(
            {
                "model": name.replace("numpy", "NumPy"),
                "ms_step": median * 1e3,
                "tokens_s": tokens / median,
                "vs": median / base,
            }
        )
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import table, write_results

    write_results(
        "numpy",
        title="The NumPy reference against the torch decoder",
        about=f"`train_step` of the decoder ({shape['n_layer']} layers of {shape['n_embd']}, "
        f"{shape['n_head']} heads, block {block}, batch {batch}, vocabulary {vocab}) in "
        "torch float32 and in the NumPy reference, interleaved step by step, "
        f"{torch.get_num_threads()} thread(s), {args.speed_steps} timed steps after 2.",
        tables=[
            table(
                "",
                [
                    ("model", "model"),
                    ("ms_step", "ms per step (median)", ".1f"),
                    ("tokens_s", "tokens/s", ",.0f"),
                    ("vs", "step time vs torch", ".2f"),
                ],
                rows,
            )
        ],
    )


def main() -> int:
    args = parse_args()
    if args.threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    import numpy as np
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, torch {torch.__version__}, "
        f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f} at start"
    )
    if not args.skip_runs:
        runs = pipeline_runs(args)
        print()
        run_verify(runs["decoder-char"]["result"]["run_id"])
    initial_losses(args)
    if not args.skip_runs:
        same_start(args)
    speed(args)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
