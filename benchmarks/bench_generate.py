"""Generation speed at batch 1 on a decoder-char run: key/value cache against recomputing.

The run is reloaded as `zoo generate` reloads it (weights, tokenizer, the precision it
trained with) and sampled through the same function the command calls; cached and uncached
rounds alternate, so a change in the machine's load hits both alike. Start-up (imports,
loading the run) is excluded: the figure is tokens per second of sampling and decoding.

    python benchmarks/bench_generate.py                 # trains a short decoder-char run first
    python benchmarks/bench_generate.py --run RUN_ID    # an existing run in $ZOO_HOME
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, header, table, write_results  # noqa: E402


def train_run(steps: int) -> str:
    """A decoder-char run on Tiny Shakespeare in a temporary ZOO_HOME; returns its id."""
    os.environ["ZOO_HOME"] = tempfile.mkdtemp(prefix="bench-generate-")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "zoo",
            "run",
            "decoder-char",
            "shakespeare",
            "--steps",
            str(steps),
            "--json",
            "--set",
            "samples=0",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    return json.loads(out.stdout)["run_id"]


def timed(trained, tokens: int, cache: bool, seed: int) -> tuple[float, float, str]:
    """Tokens per second of wall-clock time and of this process's CPU time (on a loaded
    machine the second is nearer what an idle one would give), and the text."""
    from zoo.pipelines.language_modeling import Sampling, generate

    wall, cpu = time.perf_counter(), time.process_time()
    text = "".join(
        generate(
            trained.model,
            trained.tokenizer,
            "",
            tokens,
            trained.block_size,
            Sampling(seed=seed, cache=cache),
        )
    )
    return tokens / (time.perf_counter() - wall), tokens / (time.process_time() - cpu), text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--run", help="an existing decoder-char run id (default: train one)")
    parser.add_argument("--steps", type=int, default=50, help="training steps for the run")
    parser.add_argument("--tokens", type=int, default=2000, help="tokens per cached round")
    parser.add_argument(
        "--uncached-tokens", type=int, default=1000, help="tokens per uncached round (it is slow)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    header("generation at batch 1: key/value cache vs recomputing the context")
    run_id = args.run or train_run(args.steps)
    from zoo.operations.reload import load_trained

    trained = load_trained(run_id)
    print(
        f"# run {run_id}: block_size {trained.block_size}, precision "
        f"{getattr(trained.model, 'precision', 'n/a')}, "
        f"threads {os.environ.get('OMP_NUM_THREADS', 'unset')}"
    )
    timed(trained, 50, True, 0), timed(trained, 20, False, 0)  # warm-up
    rates = {(way, clock): [] for way in ("cached", "uncached") for clock in ("wall", "cpu")}
    for r in range(args.rounds):
        texts = {}
        for way, tokens in (("cached", args.tokens), ("uncached", args.uncached_tokens)):
            wall, cpu, texts[way] = timed(trained, tokens, way == "cached", r)
            rates[way, "wall"].append(wall)
            rates[way, "cpu"].append(cpu)
        # Same seed, same contexts: the same text (unless the run computes in bf16, which
        # the uncached path keeps and the cached one, on the CPU, does not).
        same = texts["cached"].startswith(texts["uncached"])
        print(
            f"round {r}: cached {rates['cached', 'wall'][-1]:,.0f} tokens/s "
            f"({rates['cached', 'cpu'][-1]:,.0f} per CPU second), uncached "
            f"{rates['uncached', 'wall'][-1]:,.0f} ({rates['uncached', 'cpu'][-1]:,.0f}); "
            f"same text: {same}"
        )
    fp32 = load_trained(run_id, precision="fp32")  # both paths at one precision
    same = timed(fp32, 300, True, 7)[2] == timed(fp32, 300, False, 7)[2]
    print(f"at fp32, cached and uncached sample the same 300 tokens: {same}")
    rows = []
    for clock in ("wall", "cpu"):
        cached, uncached = (statistics.median(rates[way, clock]) for way in ("cached", "uncached"))
        print(
            f"median per {clock} second: cached {cached:,.0f} tokens/s ({args.tokens} tokens), "
            f"uncached {uncached:,.0f} tokens/s ({args.uncached_tokens} tokens); "
            f"ratio {cached / uncached:.1f}x"
        )
        rows.append(
            {
                "clock": f"per {'wall-clock' if clock == 'wall' else 'CPU'} second",
                "cached": cached,
                "uncached": uncached,
                "ratio": cached / uncached,
            }
        )
    write_results(
        "generate",
        title="Generation with a key/value cache",
        about="`zoo generate` on a `decoder-char` run at batch 1: tokens per second with the "
        "key/value cache against recomputing the whole context for every token "
        f"(median of {args.rounds} rounds, measured side by side in one process).",
        tables=[
            table(
                "",
                [
                    ("clock", "tokens"),
                    ("cached", "cached, tokens/s", ",.0f"),
                    ("uncached", "recomputed, tokens/s", ",.0f"),
                    ("ratio", "ratio", ".1f"),
                ],
                rows,
            )
        ],
        notes=[f"At fp32, cached and recomputed sampling give the same text: {same}."],
    )


if __name__ == "__main__":
    main()
