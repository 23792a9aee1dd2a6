"""`zoo list` latency: wall and CPU time of fresh `python -m zoo list models` and `zoo list`
processes, the median of N runs, with the transformers type list's cache cold (deleted
before each run, so the mappings are parsed from transformers' source) and warm; beside a
bare interpreter start; and a check that listing imports neither torch nor transformers.

    python benchmarks/bench_list.py --repeat 15

The CPU time (user + system of the child) hardly moves with the machine's load; the wall
time does, so the load average before and after is recorded beside it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, header, load, percentile, table, write_results  # noqa: E402

PROBE = (
    "import sys; from zoo.cli.main import main; main(['list']); "
    "print(*[m for m in ('torch', 'transformers') if m in sys.modules] or ['neither'], "
    "file=sys.stderr)"
)
COMMANDS = {"zoo list models": ["-m", "zoo", "list", "models"], "zoo list": ["-m", "zoo", "list"]}


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, cwd=REPO, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(what: str, argv: list[str], cache: str, repeat: int, env: dict) -> dict:
    """The median of ``repeat`` runs; a cold cache is deleted before each run."""
    cache_file = Path(env["ZOO_CACHE"]) / "transformers-types.json"
    if cache == "warm":
        timed(argv, env)  # writes the cache
    runs = []
    for _ in range(repeat):
        if cache == "cold":
            cache_file.unlink(missing_ok=True)
        runs.append(timed(argv, env))
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    row = {
        "what": what,
        "cache": cache,
        "median_ms": percentile(walls, 0.5) * 1e3,
        "best_ms": min(walls) * 1e3,
        "cpu_ms": percentile(cpus, 0.5) * 1e3,
    }
    print(
        f"{what:16} {cache:5} cache: wall median {row['median_ms']:.0f} ms, best "
        f"{row['best_ms']:.0f} ms; CPU median {row['cpu_ms']:.0f} ms ({load()})"
    )
    return row


def hf_types() -> int:
    from zoo.plugins.transformers.types import model_types

    return len(model_types())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)

    header("zoo list latency")
    load_before = load()
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "ZOO_CACHE": folder, "ZOO_HOME": os.path.join(folder, "runs")}
        rows = [measure("python -c pass", ["-c", "pass"], "-", args.repeat, env)]
        for cache in ("cold", "warm"):
            rows += [measure(w, a, cache, args.repeat, env) for w, a in COMMANDS.items()]
        probe = subprocess.run(
            [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, env=env
        )
    imported = probe.stderr.strip().splitlines()[-1]
    print(f"listing imports: {imported}")
    print(f"# after: {load()}")
    for row in rows:
        row["imports"] = imported if row["what"].startswith("zoo") else "neither"
    write_results(
        "list",
        title="`zoo list` latency",
        about="Wall and CPU time of a fresh `python -m zoo list models` (the presets) and "
        f"`python -m zoo list` (everything, the {hf_types()} `hf-*` architectures among them) "
        "process, "
        "the median of the runs, with the cached transformers type list cold (parsed from "
        "transformers' source) and warm, beside a bare interpreter start. Registration is "
        "lazy: listing imports neither torch nor transformers.",
        tables=[
            table(
                "",
                [
                    ("what", "process"),
                    ("cache", "type cache"),
                    ("median_ms", "median wall ms", ".0f"),
                    ("best_ms", "best wall ms", ".0f"),
                    ("cpu_ms", "median CPU ms", ".0f"),
                    ("imports", "imports torch or transformers"),
                ],
                rows,
            )
        ],
        notes=[
            f"{args.repeat} runs of each; {load_before} before, {load()} after. CPU time is "
            "user + system of the process; wall time grows with the machine's load."
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
