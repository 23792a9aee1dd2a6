"""The screenshots of docs/guide/ui.md: a small store of real runs, served by `zoo ui` and
photographed in Debian's chromium (headless, driven by Playwright: zoo.web.browser, as
the browser tests launch it), one PNG per view.

    ZOO_DATASETS=PATH/TO/MIRROR .venv/bin/python scripts/ui_screenshots.py [--home DIR]

The store is made by zoo itself in a temporary ZOO_HOME (or DIR, kept, and used again when
it holds one): short runs of two classifiers on rotten_tomatoes over two seeds, their
ensemble, and a short search; it takes minutes. The pictures go to docs/images/ui-*.png.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "images"
COMMANDS = [
    "sweep fasttext-wordpunct nbsvm-wordpunct --on rotten_tomatoes --seeds 2 --steps 300 --quiet",
    "tune fasttext-wordpunct --on rotten_tomatoes --space lr=log(1e-3,1e-1) --trials 5 "
    "--steps 300 --seeds 1 --quiet",
]


def zoo(command: str, home: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "zoo", *command.split()],
        env={**os.environ, "ZOO_HOME": str(home), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"zoo {command} failed:\n{done.stderr}")
    return done.stdout


def make_store(home: Path) -> None:
    for command in COMMANDS:
        print(f"zoo {command}", flush=True)
        zoo(command, home)
    os.environ["ZOO_HOME"] = str(home)
    zoo(f"ensemble {' '.join(best_two())} --weights fit", home)


def best_two() -> list[str]:
    """The best fastText and NBSVM runs of the sweep at seed 1."""
    from zoo.comparison.runs import run_frame, select

    chosen = []
    for model in ("fasttext-wordpunct", "nbsvm-wordpunct"):
        where = f"kind == 'train' and seed == 1 and model == '{model}'"
        chosen.append(select(run_frame(), where=where, sort="-value")["id"].iloc[0])
    return chosen


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--home", type=Path, help="the store to make (or use again)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = args.home or Path(folder) / "runs"
        if not (home / "zoo.db").is_file():
            make_store(home)
        os.environ["ZOO_HOME"] = str(home)
        photograph(home, *best_two())
    return 0


def photograph(home: Path, first: str, second: str) -> None:
    from zoo.web.app import Server
    from zoo.web.chromium import headless_chromium

    server = Server(home).start()
    views = {
        "runs": "/runs",
        "compare": "/compare?baseline=nbsvm-wordpunct",
        "curves": f"/curves?run={first}&run={second}",
        "run": f"/runs/{first}",
        "tune": "/tune",
    }
    OUT.mkdir(parents=True, exist_ok=True)
    try:
        with headless_chromium() as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            for name, path in views.items():
                page.goto(server.url + path)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=OUT / f"ui-{name}.png")
                print(f"wrote {OUT.relative_to(REPO) / f'ui-{name}.png'}")
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
