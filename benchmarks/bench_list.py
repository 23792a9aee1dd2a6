"""`zoo list` latency: wall time of a fresh `python -m zoo list` process, and a check that
listing imports no torch (registration is lazy).

    python benchmarks/bench_list.py --repeat 10
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, header, load, percentile, table, write_results  # noqa: E402

PROBE = (
    "import sys; from zoo.cli.main import main; main(['list']); "
    "print('torch imported' if 'torch' in sys.modules else 'no torch', file=sys.stderr)"
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)

    header("zoo list latency")
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "zoo", "list"], capture_output=True, text=True, cwd=REPO
        )
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"zoo list failed:\n{done.stderr}")
    start = time.perf_counter()
    bare = [subprocess.run([sys.executable, "-c", "pass"]) for _ in range(3)]
    interpreter = (time.perf_counter() - start) / len(bare)
    probe = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO)
    imports = probe.stderr.strip().splitlines()[-1]
    print(
        f"zoo list: median {percentile(times, 0.5) * 1e3:.0f} ms, best {min(times) * 1e3:.0f} ms "
        f"over {args.repeat} runs (bare interpreter start {interpreter * 1e3:.0f} ms); "
        f"{imports}"
    )
    print(f"# after: {load()}")
    write_results(
        "list",
        title="`zoo list` latency",
        about="Wall time of a fresh `python -m zoo list` process (registration is lazy, so "
        "listing imports no torch), beside a bare interpreter start.",
        tables=[
            table(
                "",
                [
                    ("what", "process"),
                    ("median_ms", "median ms", ".0f"),
                    ("best_ms", "best ms", ".0f"),
                    ("torch", "imports torch"),
                ],
                [
                    {
                        "what": "zoo list",
                        "median_ms": percentile(times, 0.5) * 1e3,
                        "best_ms": min(times) * 1e3,
                        "torch": imports != "no torch",
                    },
                    {
                        "what": "python -c pass",
                        "median_ms": interpreter * 1e3,
                        "best_ms": None,
                        "torch": False,
                    },
                ],
            )
        ],
        notes=[f"{args.repeat} runs of zoo list."],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
