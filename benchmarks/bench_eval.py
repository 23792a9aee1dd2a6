"""Evaluation throughput: tokens/s of the whole-split evaluation `zoo run` ends with, and of
text generation (one token at a time, as `zoo generate` and the run's samples do).

    python benchmarks/bench_eval.py
    python benchmarks/bench_eval.py --set block_size=128 --eval-batch 128
    python benchmarks/bench_eval.py --model decoder-char --set precision=fp32

The evaluation is timed twice, alternating: keeping each window's score (what comparisons
pair by window) and with the batch sums alone, so the cost of the window scores is measured
side by side.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import header, load, parse_sets, table, write_results  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--model", default="decoder-char-nanogpt", help="a char decoder preset")
    parser.add_argument("--dataset", default="shakespeare")
    parser.add_argument("--set", action="append", help="overrides on the preset (as zoo run --set)")
    parser.add_argument("--eval-batch", type=int, default=64, help="windows per forward pass")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--generate", type=int, default=200, help="tokens to generate (0: skip)")
    parser.add_argument("--threads", type=int)
    args = parser.parse_args(argv)

    import torch
    from zoo.pipelines.language_modeling import Sampling, encode, generate, split_text

    from zoo.core.loading import get_zoo, task_loss
    from zoo.core.names import get_task
    from zoo.data import datasets
    from zoo.train.model import TaskSpec
    from zoo.train.plan import plan_run
    from zoo.train.torch_model import as_model

    if args.threads:
        torch.set_num_threads(args.threads)
    header(f"evaluation throughput, {args.model}")
    zoo = get_zoo()
    plan = plan_run(args.model, args.dataset, overrides=parse_sets(args.set))
    loaded = datasets.load(plan.dataset_ref, zoo)
    tokenizer = (
        zoo.tokenizers.get("char").load().train(loaded.split("train")[loaded.text_column], None)
    )
    ids = encode(tokenizer, split_text(loaded, "validation"))
    torch.manual_seed(0)
    spec = TaskSpec("language-modeling", tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    model = as_model(
        plan.spec.architecture.load()(plan.configs["model"], spec),
        "cpu",
        loss=task_loss(get_task("language-modeling")),
    )
    model.configure_engine(precision=plan.configs["train"].precision)  # as `zoo run` evaluates
    block = plan.configs["model"].block_size
    print(
        f"# validation split: {len(ids):,} tokens; block {block}, eval batch {args.eval_batch}; "
        f"precision {model.precision}; threads {torch.get_num_threads()}"
    )
    timed = time_evaluation(model, ids, block, args.eval_batch, args.repeat)
    rows = []
    for what, (times, nll, count) in timed.items():
        best, median = min(times), sorted(times)[len(times) // 2]
        print(
            f"evaluate, {what}: {count:,} tokens in {median:.2f} s (best {best:.2f} s): "
            f"{count / median:,.0f} tokens/s (best {count / best:,.0f}); loss {nll / count:.4f}"
        )
        rows.append(
            {
                "what": f"evaluate the validation split ({count:,} tokens), {what}",
                "tokens_s": count / median,
                "best": count / best,
            }
        )
    if args.generate:
        start = time.perf_counter()
        text = "".join(generate(model, tokenizer, "", args.generate, block, Sampling(seed=0)))
        spent = time.perf_counter() - start
        print(
            f"generate: {args.generate} tokens in {spent:.2f} s: "
            f"{args.generate / spent:,.0f} tokens/s ({len(text)} characters)"
        )
        rows.append(
            {
                "what": f"generate {args.generate} tokens",
                "tokens_s": args.generate / spent,
                "best": None,
            }
        )
    print(f"# after: {load()}")
    write_results(
        "eval",
        title="Evaluation throughput",
        about=f"Tokens per second of the whole-split evaluation `zoo run` ends with, and of "
        f"generation, for `{args.model}` (block {block}, evaluation batch "
        f"{args.eval_batch}, precision {model.precision}, {torch.get_num_threads()} "
        "threads).",
        tables=[
            table(
                "",
                [
                    ("what", "what"),
                    ("tokens_s", "tokens/s, median", ",.0f"),
                    ("best", "best", ",.0f"),
                ],
                rows,
            )
        ],
    )
    return 0


class SumsOnly:
    """The model as a plugin without ``loss_per_row`` sees it: ``loss_sum`` alone."""

    def __init__(self, model):
        self.loss_sum = model.loss_sum


def time_evaluation(model, ids, block: int, batch: int, repeat: int) -> dict:
    """The whole-split evaluation timed `repeat` times each way, alternating: keeping each
    window's score (``loss_per_row``, what `zoo run` does with a torch model) and with the
    batch sums alone (``loss_sum``, a model without it). way -> (seconds, nats, tokens)."""
    from zoo.pipelines.language_modeling import scored_windows

    ways = {"each window's score kept": model, "batch sums only": SumsOnly(model)}
    for scored in ways.values():  # warm-up
        scored_windows(scored, ids[: block * 8 + 1], block, batch)
    times: dict = {what: [] for what in ways}
    found = {}
    for _ in range(repeat):
        for what, scored in ways.items():
            start = time.perf_counter()
            result = scored_windows(scored, ids, block, batch)
            times[what].append(time.perf_counter() - start)
            found[what] = (result.nats, result.count)
    return {what: (times[what], *found[what]) for what in ways}


if __name__ == "__main__":
    sys.exit(main())
