"""Regenerate everything in README.md and docs/ that the program or a benchmark prints:
the benchmark figures, the command reference and every marked console block.

    python scripts/render_docs.py            # rewrite what is out of date
    python scripts/render_docs.py --check    # exit 1 if anything is out of date

The console blocks train small models (a few minutes on two cores); set ZOO_DATASETS to
the dataset mirror first when the catalogue's mirror path does not hold it.
"""

from __future__ import annotations

import argparse
import sys

import render_benchmarks
import render_commands
import render_console


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--check", action="store_true", help="exit 1 if anything is stale")
    args = parser.parse_args(argv)
    flags = ["--check"] if args.check else []
    codes = [
        render_benchmarks.main(flags),
        render_commands.main(flags),
        render_console.main(flags),  # last: README's blocks around the rendered results
    ]
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
