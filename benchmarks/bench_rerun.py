"""What a second `zoo run decoder-char FILE --steps 5` on a large file costs, against the same
command with the two settings issue 18's last changes made: Python's garbage collector
left at its defaults (`zoo.cli.main.main(argv)` called from Python does not tune it) and
eval_tokens=250,000 (the former default). Evaluation under inference_mode and the cheaper
split_size are in both variants.

The file is Tiny Shakespeare repeated --copies times (default 50: 56 MB). One run first
fills the caches; then the two variants alternate in fresh processes, --rounds times, and
the script prints each one's median wall-clock and CPU seconds, peak resident memory, and
the ratios of the medians.

    OMP_NUM_THREADS=1 python benchmarks/bench_rerun.py [--copies 50 --rounds 3]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, header, load  # noqa: E402

RUN = ["run", "decoder-char", "{file}", "--steps", "5", "--quiet"]
VARIANTS = {
    "now": [sys.executable, "-m", "zoo", *RUN],
    "before": [sys.executable, "-c", "import sys; from zoo.cli.main import main; "
               "sys.exit(main(sys.argv[1:]))", *RUN, "--set", "eval_tokens=250000"],
}


def timed(command: list[str], env: dict) -> tuple[float, float, float]:
    """Wall-clock seconds, CPU seconds (user + system) and peak resident MB of one process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{child.stderr.read().decode()[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    header(f"a second `zoo run decoder-char FILE --steps 5`, FILE = Tiny Shakespeare x{args.copies}")
    from bench_data import shakespeare_text

    work = Path(tempfile.mkdtemp(prefix="bench-rerun-"))
    try:
        path = work / "shakespeare.txt"
        path.write_text(shakespeare_text() * args.copies, encoding="utf-8")
        env = {**os.environ, "HF_DATASETS_CACHE": str(work / "hf"),
               "ZOO_HOME": str(work / "runs"), "ZOO_CACHE": str(work / "zoo")}
        commands = {name: [part.format(file=path) for part in command]
                    for name, command in VARIANTS.items()}
        first = timed(commands["now"], env)
        print(f"first run (fills the caches): {first[0]:.1f} s ({first[1]:.1f} CPU s), "
              f"{first[2]:.0f} MB", flush=True)
        figures: dict[str, list] = {name: [] for name in commands}
        for round_ in range(args.rounds):
            order = list(commands) if round_ % 2 == 0 else list(reversed(commands))
            for name in order:
                figures[name].append(timed(commands[name], env))
                wall, cpu, rss = figures[name][-1]
                print(f"round {round_ + 1} {name}: {wall:.1f} s ({cpu:.1f} CPU s), {rss:.0f} MB "
                      f"({load()})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {name: [statistics.median(r[i] for r in runs) for i in range(3)]
               for name, runs in figures.items()}
    for name, (wall, cpu, rss) in medians.items():
        print(f"{name}: median {wall:.2f} s wall, {cpu:.2f} CPU s, {rss:.0f} MB peak")
    (wall0, cpu0, _), (wall1, cpu1, _) = medians["before"], medians["now"]
    print(f"before / now: {wall0 / wall1:.2f}x wall, {cpu0 / cpu1:.2f}x CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
