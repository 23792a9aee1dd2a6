"""Peak memory (maximum resident set size) of `zoo run decoder-char shakespeare`.

The run is a child process; its peak RSS comes from getrusage(RUSAGE_CHILDREN) after it
exits, so nothing is sampled and no peak is missed.

    python benchmarks/bench_memory.py                         # the default preset, full run
    python benchmarks/bench_memory.py decoder-char --steps 200
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
from common import REPO, header, load, table, write_results  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("model", nargs="?", default="decoder-char")
    parser.add_argument("--dataset", default="shakespeare")
    parser.add_argument("--steps", help="passed to zoo run")
    parser.add_argument("--set", action="append", default=[], help="passed to zoo run")
    args = parser.parse_args(argv)

    header(f"peak memory, zoo run {args.model} {args.dataset}")
    command = [
        sys.executable,
        "-m",
        "zoo",
        "run",
        args.model,
        args.dataset,
        "--json",
        *(["--steps", args.steps] if args.steps else []),
        *[a for s in args.set for a in ("--set", s)],
    ]
    with tempfile.TemporaryDirectory(prefix="zoo-mem-") as home:
        start = time.perf_counter()
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=REPO, env={**os.environ, "ZOO_HOME": home}
        )
        wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"zoo run failed:\n{done.stderr[-3000:]}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    metrics = json.loads(done.stdout.strip().splitlines()[-1])["metrics"]
    print(
        f"peak RSS {peak_kib / 1024:,.0f} MiB; wall {wall:.1f} s; val_loss "
        f"{metrics['val_loss']:.4f}; steps {metrics['steps']}"
    )
    print(f"# after: {load()}")
    write_results(
        "memory",
        title="Peak memory",
        about="Peak resident memory of a whole `zoo run` process (getrusage of the child "
        "after it exits, so no peak is missed).",
        tables=[
            table(
                "",
                [
                    ("command", "command"),
                    ("peak_mib", "peak RSS, MiB", ",.0f"),
                    ("wall_s", "wall s", ".1f"),
                    ("val_loss", "val_loss", ".4f"),
                    ("steps", "steps"),
                ],
                [
                    {
                        "command": " ".join(
                            [
                                "zoo run",
                                args.model,
                                args.dataset,
                                *command[command.index("--json") + 1 :],
                            ]
                        ),
                        "peak_mib": peak_kib / 1024,
                        "wall_s": wall,
                        "val_loss": metrics["val_loss"],
                        "steps": metrics["steps"],
                    }
                ],
            )
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
