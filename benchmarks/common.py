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
    from zoo.core.machine import cpu

    return cpu()["model"]


def load() -> str:
    try:
        return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "load n/a"


def header(title: str) -> None:
    import importlib.metadata as md

    try:
        torch_version = md.version("torch")
    except md.PackageNotFoundError:
        torch_version = "none"
    print(f"# {title}")
    print(
        f"# {cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"torch {torch_version}; {load()}"
    )
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


# -- results as data: benchmarks/results/NAME.json, rendered into the docs by
#    scripts/render_benchmarks.py (the docs show only what these files hold) --

# ZOO_BENCH_RESULTS writes them elsewhere (a smoke run's figures must not replace real ones)
RESULTS = Path(os.environ.get("ZOO_BENCH_RESULTS") or REPO / "benchmarks" / "results")


def machine() -> dict:
    """The machine a figure was measured on: CPU, cores, system, load, and the GPU if torch
    sees one (checked only when torch is already imported, so listing stays light)."""
    from zoo.core.machine import AVX2_HOLD, cpu, kind

    found = {
        "cpu": cpu_name(),
        "cpu_flags": cpu()["flags"],  # the instruction sets that change speed and figures
        "cpu_kind": kind(cpu()["flags"]),
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.machine()}",
    }
    caps = [f"{k}={os.environ[k]}" for k in AVX2_HOLD if k in os.environ]
    if caps:  # torch held below the CPU's own instruction sets (zoo.train.precision)
        found["held_at"] = " ".join(caps)
    try:
        found["load"] = [round(value, 2) for value in os.getloadavg()]
    except OSError:
        pass
    torch = sys.modules.get("torch")
    if torch is not None:
        from zoo.train.precision import resolve_precision

        found["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        found["auto_precision"] = resolve_precision("auto", torch.device("cpu"))
        if torch.cuda.is_available():
            found["gpu"] = torch.cuda.get_device_name(0)
    return found


def versions() -> dict:
    import importlib.metadata as md

    found = {"python": platform.python_version()}
    for package in ("torch", "zoo"):
        try:
            found[package] = md.version(package)
        except md.PackageNotFoundError:
            found[package] = None
    return found


def table(caption: str, columns: list, rows: list[dict], *, readme: bool = False) -> dict:
    """One table of a result: ``columns`` are ``(key, heading)`` or ``(key, heading, format)``
    with a format spec for numbers (``".2f"``, ``",.0f"``); ``readme`` also puts it in the
    README's results section."""
    return {
        "caption": caption,
        "columns": [list(column) for column in columns],
        "rows": rows,
        "readme": readme,
    }


def write_results(
    name: str,
    *,
    title: str,
    about: str,
    tables: list[dict],
    command: str | None = None,
    notes: list[str] | None = None,
    provenance: str | None = None,
    folder: Path | None = None,
) -> Path:
    """Write one benchmark's current figures to benchmarks/results/NAME.json, with the
    machine, the versions and the date; scripts/render_benchmarks.py renders them into the
    docs. ``provenance`` says where figures come from when they were not measured by this
    call (an earlier run on another machine, say)."""
    import datetime
    import json

    record = {
        "name": name,
        "title": title,
        "about": about,
        "command": command
        or " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "versions": versions(),
        "tables": tables,
        "notes": list(notes or []),
    }
    if provenance:
        record["provenance"] = provenance
    folder = folder or RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"# results: {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")
    return path
