"""Steady-state training throughput of decoder-char at nanoGPT's CPU reference config
(the decoder-char-nanogpt preset).

Each variant is a model and optimizer built exactly as `zoo run` builds them (same plan,
same engine options, same batch sampler); timed windows of steps alternate between the
variants, so a change in the machine's load hits them all alike. The figure is tokens per
second of optimizer steps (batch sampling included, periodic validation excluded), as
nanoGPT's ms per iteration is.

    python benchmarks/bench_train.py                                # the reference config
    python benchmarks/bench_train.py --compare precision=bf16 --compare compile=true
    python benchmarks/bench_train.py --set batch_size=32 --threads 1
    python benchmarks/bench_train.py --compare optimizer=foreach   # bench-only key: fused|foreach|loop
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import NANOGPT_TOKENS_PER_S, header, load, parse_sets, percentile, table, write_results  # noqa: E402


def prepare_data(dataset: str):
    from zoo.pipelines.language_modeling import encode, split_text

    from zoo.core.loading import get_zoo
    from zoo.data import datasets

    zoo = get_zoo()
    loaded = datasets.load(datasets.resolve(dataset, zoo), zoo)
    tokenizer = (
        zoo.tokenizers.get("char").load().train(loaded.split("train")[loaded.text_column], None)
    )
    return tokenizer, encode(tokenizer, split_text(loaded, "train"))


class Variant:
    """One model + optimizer, configured like `zoo run` with these overrides."""

    def __init__(
        self,
        name: str,
        model: str,
        overrides: dict,
        tokenizer,
        ids,
        dataset: str,
        seed: int = 0,
        device: str = "cpu",
    ):
        import numpy as np
        import torch

        from zoo.core.loading import task_loss
        from zoo.core.names import get_task
        from zoo.train.model import TaskSpec
        from zoo.train.plan import PlanChoices, plan_run
        from zoo.train.torch_model import as_model

        overrides = dict(overrides)
        optimizer = overrides.pop("optimizer", None)  # bench-only: fused, foreach or loop
        plan = plan_run(model, dataset, overrides=overrides, choices=PlanChoices(seed=seed))
        self.name, self.ids = name, ids
        self.model_cfg, self.cfg = plan.configs["model"], plan.configs["train"]
        torch.manual_seed(seed)
        spec = TaskSpec("language-modeling", tokenizer.vocab_size, pad_id=tokenizer.pad_id)
        self.model = as_model(
            plan.spec.architecture.load()(self.model_cfg, spec),
            device,
            loss=task_loss(get_task("language-modeling")),
        )
        if hasattr(self.model, "configure_engine"):
            self.model.configure_engine(
                precision=getattr(self.cfg, "precision", "auto"),
                compile=getattr(self.cfg, "compile", False),
                cuda_graph=getattr(self.cfg, "cuda_graph", False),
            )
        self.model.configure_optimizer(self.cfg.lr, self.cfg.weight_decay)
        if optimizer is not None:  # the same groups, another AdamW implementation
            impl = {
                "fused": {"fused": True},
                "foreach": {"foreach": True},
                "loop": {"foreach": False},
            }[optimizer]
            groups = [
                {k: v for k, v in g.items() if k not in ("fused", "foreach")}
                for g in self.model.optimizer.param_groups
            ]
            self.model.optimizer = torch.optim.AdamW(groups, **impl)
        self.rng = np.random.default_rng(seed)
        self.tokens_per_step = self.cfg.batch_size * self.model_cfg.block_size
        self.times: list[float] = []

    def step(self) -> float:
        from zoo.pipelines.language_modeling import random_batch

        x, y = random_batch(self.ids, self.cfg.batch_size, self.model_cfg.block_size, self.rng)
        return self.model.train_step(x, y, self.cfg.lr, None, self.cfg.grad_clip)

    def window(self, steps: int) -> None:
        start = time.perf_counter()
        for _ in range(steps):
            self.step()
        self.times.append((time.perf_counter() - start) / steps)


def alternate(variants: list[Variant], steps: int, windows: int) -> float:
    """Time the variants in alternating windows (machine drift hits all of them alike);
    returns the first variant's median tokens/s, the reference for the ratios."""
    per_window = max(1, steps // windows)
    for _ in range(windows):
        for variant in variants:
            variant.window(per_window)
    return variants[0].tokens_per_step / percentile(variants[0].times, 0.5)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--model", default="decoder-char-nanogpt", help="a decoder preset")
    parser.add_argument("--dataset", default="shakespeare")
    parser.add_argument("--set", action="append", help="override on top of the reference config")
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="K=V[,K=V]",
        help="a further variant: overrides on top of the base (repeatable)",
    )
    parser.add_argument("--steps", type=int, default=300, help="timed steps per variant")
    parser.add_argument("--windows", type=int, default=6, help="timed windows per variant")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps per variant")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    args = parser.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    header(f"training throughput, {args.model}")
    tokenizer, ids = prepare_data(args.dataset)
    base = parse_sets(args.set)
    specs = [("base", base)] + [(c, {**base, **parse_sets(c.split(","))}) for c in args.compare]
    print(
        f"# base: {args.model} {' '.join(f'{k}={v}' for k, v in base.items())}; "
        f"threads {torch.get_num_threads()}"
    )
    variants = []
    for name, overrides in specs:
        start = time.perf_counter()
        variant = Variant(name, args.model, overrides, tokenizer, ids, args.dataset)
        for _ in range(args.warmup):
            variant.step()
        print(
            f"# {name}: set-up and {args.warmup} warm-up steps {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        variants.append(variant)
    reference = alternate(variants, args.steps, args.windows)
    print(
        f"{'variant':<32} {'ms/step':>8} {'best':>8} {'tokens/s':>9} {'best tok/s':>10} "
        f"{'vs base':>7} {'vs nanoGPT':>10}"
    )
    rows = []
    for v in variants:
        median, best = percentile(v.times, 0.5), min(v.times)
        rate = v.tokens_per_step / median
        print(
            f"{v.name:<32} {median * 1e3:8.1f} {best * 1e3:8.1f} {rate:9,.0f} "
            f"{v.tokens_per_step / best:10,.0f} {rate / reference:7.2f} "
            f"{rate / NANOGPT_TOKENS_PER_S:10.2f}"
        )
        rows.append(
            {
                "variant": v.name,
                "ms_step": median * 1e3,
                "tokens_s": rate,
                "vs_base": rate / reference,
            }
        )
    print(f"# after: {load()}")
    write_results(
        "train",
        title="Training throughput",
        about=f"Steady-state training tokens per second of `{args.model}` built as `zoo run` "
        f"builds it ({torch.get_num_threads()} threads); variants timed in alternating "
        f"windows ({args.steps} timed steps per variant in {args.windows} windows) in one "
        "process.",
        tables=[
            table(
                "",
                [
                    ("variant", "variant"),
                    ("ms_step", "ms per step", ".1f"),
                    ("tokens_s", "tokens/s", ",.0f"),
                    ("vs_base", "vs base", ".2f"),
                ],
                rows,
            )
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
