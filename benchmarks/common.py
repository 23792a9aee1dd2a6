"""Shared by the benchmark scripts: the machine, the load on it, and the reference config.

The machine is often shared, so every script prints the load average next to its figures;
compare variants as ratios measured in one process, not as absolute numbers across runs.
"""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# nanoGPT's CPU recipe for character-level Shakespeare (the performance reference) is the
# decoder-char-nanogpt preset in registry.toml; its train.py ran it at this speed here:
NANOGPT_TOKENS_PER_S = 14_800  # 52 ms per iteration of 12 x 64 tokens (issue 10)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load() -> str:
    try:
        return "load %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load n/a"


def header(title: str) -> None:
    import importlib.metadata as md

    try:
        torch_version = md.version("torch")
    except md.PackageNotFoundError:
        torch_version = "none"
    print(f"# {title}")
    print(f"# {cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch_version}; {load()}")
    print(f"# {' '.join([Path(sys.argv[0]).name, *sys.argv[1:]])}")


def parse_sets(items: list[str] | None) -> dict:
    """--set key=value pairs, values left as strings (zoo's config parser types them)."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
