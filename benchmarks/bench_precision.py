"""Which precision trains faster on which CPU: fp32 against bf16 autocast, on this CPU's own
kernels and with torch held at AVX2 (ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2: how
torch computes on an AVX2-only CPU, where bf16 is emulated).

Each kernel set is one run of bench_train.py (the two precisions timed in alternating
windows in one process, so the machine's load hits both alike); the table is their ratio.

    python benchmarks/bench_precision.py                  # decoder-char-nanogpt, 1 thread
    python benchmarks/bench_precision.py --steps 20 --windows 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import header, load, table, write_results  # noqa: E402

from zoo.core.machine import AVX2_HOLD  # noqa: E402

KERNELS = {
    "this CPU's own": {},
    "held at AVX2": AVX2_HOLD,
}


def measure(env: dict, args) -> dict:
    """bench_train.py's fp32 and bf16 tokens per second under ``env``."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            str(Path(__file__).with_name("bench_train.py")),
            "--model",
            args.model,
            "--set",
            "precision=fp32",
            "--compare",
            "precision=bf16",
            "--steps",
            str(args.steps),
            "--windows",
            str(args.windows),
            "--warmup",
            str(args.warmup),
            "--threads",
            str(args.threads),
        ]
        environment = {**os.environ, **env, "ZOO_BENCH_RESULTS": folder}
        subprocess.run(command, env=environment, check=True)
        record = json.loads((Path(folder) / "train.json").read_text(encoding="utf-8"))
    rows = {row["variant"]: row for row in record["tables"][0]["rows"]}
    fp32, bf16 = rows["base"]["tokens_s"], rows["precision=bf16"]["tokens_s"]
    auto = "bf16" if record["machine"].get("auto_precision") == "bf16" else "fp32"
    return {"fp32": fp32, "bf16": bf16, "ratio": bf16 / fp32, "auto": auto}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--model", default="decoder-char-nanogpt", help="a decoder preset")
    parser.add_argument("--steps", type=int, default=60, help="timed steps per precision")
    parser.add_argument("--windows", type=int, default=3, help="timed windows per precision")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps per precision")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args(argv)
    header("fp32 against bf16 autocast, on this CPU's kernels and held at AVX2")
    rows = []
    for kernels, env in KERNELS.items():
        found = measure(env, args)
        rows.append({"kernels": kernels, **found})
        print(f"{kernels}: {found}", flush=True)
    print(f"# after: {load()}")
    write_results(
        "precision",
        title="Precision by CPU kind",
        about=f"Training tokens per second of `{args.model}` in fp32 and in bf16 autocast "
        f"({args.threads} thread(s)), each pair timed in alternating windows in one process: "
        "on this CPU's own kernels, and with torch held at AVX2 (what an AVX2-only CPU runs; "
        "bf16 is emulated there). `auto` is the precision zoo chooses for each.",
        tables=[
            table(
                "",
                [
                    ("kernels", "torch's kernels"),
                    ("fp32", "fp32 tokens/s", ",.0f"),
                    ("bf16", "bf16 tokens/s", ",.0f"),
                    ("ratio", "bf16 / fp32", ".2f"),
                    ("auto", "auto chooses"),
                ],
                rows,
            )
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
