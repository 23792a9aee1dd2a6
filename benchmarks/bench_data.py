"""How the cost of a short run grows with the data: `zoo run decoder-char FILE --steps 5` on
Tiny Shakespeare repeated 1, 10 and 50 times (1.1, 11 and 56 MB).

Each size runs twice in fresh processes: first on sight (empty datasets and zoo caches, so
the text is read into Arrow, split, tokenized and written as token files) and then again
(the caches are found). Wall-clock seconds and peak resident memory come from the child
process itself (os.wait4), so start-up and imports are included, as a user sees them.

    OMP_NUM_THREADS=1 python benchmarks/bench_data.py
    python benchmarks/bench_data.py --copies 1 --copies 50
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, header, load, table, write_results  # noqa: E402


def shakespeare_text() -> str:
    from bench_nanogpt import shakespeare_text as text

    return text()


def timed_run(path: Path, env: dict) -> tuple[float, float, float]:
    """Wall-clock seconds, CPU seconds (user + system: on a loaded machine, nearer what an
    idle one would take) and peak resident MB of one `zoo run decoder-char PATH --steps 5`."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "zoo", "run", "decoder-char", str(path), "--steps", "5", "--quiet"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"zoo run failed on {path}:\n{child.stderr.read().decode()[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # KB on Linux


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument(
        "--copies",
        type=int,
        action="append",
        help="how many times the text is repeated (default: 1, 10, 50)",
    )
    args = parser.parse_args(argv)
    header("cost of `zoo run decoder-char FILE --steps 5` against the size of FILE")
    text = shakespeare_text()
    rows = []
    work = Path(tempfile.mkdtemp(prefix="bench-data-"))
    try:
        for copies in args.copies or [1, 10, 50]:
            path = work / f"shakespeare-x{copies}.txt"
            path.write_text(text * copies, encoding="utf-8")
            mb = path.stat().st_size / 1e6
            caches = work / f"caches-x{copies}"
            env = {
                **os.environ,
                "HF_DATASETS_CACHE": str(caches / "hf"),
                "ZOO_HOME": str(caches / "runs"),
                "ZOO_CACHE": str(caches / "zoo"),
            }
            first = timed_run(path, env)
            again = timed_run(path, env)
            rows.append((copies, mb, first, again))
            print(
                f"x{copies}: {mb:.1f} MB: first {first[0]:.1f} s ({first[1]:.1f} CPU s), "
                f"{first[2]:.0f} MB resident; again {again[0]:.1f} s ({again[1]:.1f} CPU s), "
                f"{again[2]:.0f} MB ({load()})",
                flush=True,
            )
            shutil.rmtree(caches, ignore_errors=True)
            path.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        "| copies | MB | first run (CPU) | peak RSS | s per MB | run again (CPU) | peak RSS | "
        "s per MB |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for copies, mb, (s1, c1, m1), (s2, c2, m2) in rows:
        print(
            f"| {copies} | {mb:.1f} | {s1:.1f} s ({c1:.1f}) | {m1:.0f} MB | {s1 / mb:.2f} | "
            f"{s2:.1f} s ({c2:.1f}) | {m2:.0f} MB | {s2 / mb:.2f} |"
        )
    write_results(
        "data",
        title="Cost against the size of the data",
        about="A short run (`zoo run decoder-char FILE --steps 5`) on Tiny Shakespeare repeated "
        "1, 10 and 50 times: first on sight (the text is read, split, tokenized and "
        "cached) and again (the caches are found). Whole processes: start-up and "
        "imports included.",
        tables=[
            table(
                "",
                [
                    ("copies", "copies"),
                    ("mb", "MB", ".1f"),
                    ("first_s", "first run, s", ".1f"),
                    ("first_cpu_s", "CPU s", ".1f"),
                    ("first_rss_mb", "peak RSS, MB", ".0f"),
                    ("again_s", "run again, s", ".1f"),
                    ("again_cpu_s", "CPU s", ".1f"),
                    ("again_rss_mb", "peak RSS, MB", ".0f"),
                ],
                [
                    {
                        "copies": copies,
                        "mb": mb,
                        "first_s": s1,
                        "first_cpu_s": c1,
                        "first_rss_mb": m1,
                        "again_s": s2,
                        "again_cpu_s": c2,
                        "again_rss_mb": m2,
                    }
                    for copies, mb, (s1, c1, m1), (s2, c2, m2) in rows
                ],
            )
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
