"""Render the current benchmark figures into the docs: benchmarks/results/*.json ->
docs/benchmarks.md, and the tables marked ``readme`` into README.md's results section.

    python scripts/render_benchmarks.py            # rewrite both
    python scripts/render_benchmarks.py --check    # exit 1 if either is out of date

The JSON files are the data (written by the scripts in benchmarks/ through
``benchmarks/common.py``); the docs only show what they hold.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
DOCS_PAGE = REPO / "docs" / "benchmarks.md"
README = REPO / "README.md"
README_START = "<!-- results: rendered by scripts/render_benchmarks.py from benchmarks/results -->"
README_END = "<!-- end of results -->"

# the order of sections on the page; results not named here follow, by name
ORDER = ["classification", "time_to_quality", "train", "nanogpt", "nanogpt_gpu",
         "transformers", "digits", "tokenizer", "data", "generate", "eval", "memory",
         "checkpoint", "numpy", "layer_norm", "sweep_jobs", "list"]

INTRO = """\
# Benchmarks

The current figures, rendered from `benchmarks/results/*.json` by
`scripts/render_benchmarks.py`; each benchmark script in `benchmarks/` writes its file with
the machine, the versions and the date. Absolute figures depend on the machine and its
load: compare variants as the ratios each benchmark measures side by side. Figures carried
over from an earlier measurement say so, with their original machine and date.
"""


def load_results(folder: Path = RESULTS) -> list[dict]:
    records = [json.loads(path.read_text(encoding="utf-8"))
               for path in sorted(folder.glob("*.json"))]
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(records, key=lambda r: (rank.get(r.get("name"), len(ORDER)), r.get("name", "")))


def cell(value, spec: str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and spec:
        return format(value, spec)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def render_table(table: dict) -> list[str]:
    columns = [(c[0], c[1] if len(c) > 1 else c[0], c[2] if len(c) > 2 else None)
               for c in table.get("columns") or []]
    rows = table.get("rows") or []
    if not columns and rows:
        columns = [(key, key, None) for key in rows[0]]
    lines = []
    if table.get("caption"):
        lines += [table["caption"], ""]
    lines.append("| " + " | ".join(heading for _, heading, _ in columns) + " |")
    lines.append("| " + " | ".join("---" if i == 0 else "---:" for i in range(len(columns)))
                 + " |")
    for row in rows:
        lines.append("| " + " | ".join(cell(row.get(key), spec) for key, _, spec in columns)
                     + " |")
    return lines + [""]


def where(record: dict) -> str:
    machine = record.get("machine") or {}
    versions = record.get("versions") or {}
    parts = [machine.get("cpu") or "unknown CPU"]
    if machine.get("cores"):
        parts[0] += f", {machine['cores']} cores"
    if machine.get("gpu"):
        parts.append(machine["gpu"])
    if machine.get("load"):
        parts.append("load average " + " ".join(f"{x:g}" for x in machine["load"]))
    software = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
    return f"{record.get('date', 'undated')}; {'; '.join(parts)}; {software}"


def render_record(record: dict) -> list[str]:
    lines = [f"## {record.get('title') or record.get('name')}", ""]
    if record.get("about"):
        lines += [record["about"], ""]
    tables = record.get("tables")
    if tables is None:  # a record without tables: its figures as one key / value table
        figures = {k: v for k, v in record.items()
                   if k not in ("name", "title", "about", "command", "date", "machine",
                                "versions", "notes", "provenance")}
        tables = [{"columns": [["key", "figure"], ["value", "value"]],
                   "rows": [{"key": k, "value": v if not isinstance(v, (dict, list))
                             else json.dumps(v)} for k, v in figures.items()]}]
    for table in tables:
        lines += render_table(table)
    for note in record.get("notes") or []:
        lines += [note, ""]
    lines.append(f"Measured {where(record)}.")
    if record.get("command"):
        lines[-1] += f" Command: `{record['command']}`."
    if record.get("provenance"):
        lines[-1] += f" Provenance: {record['provenance']}"
    return lines + [""]


def render_page(records: list[dict]) -> str:
    lines = [INTRO]
    for record in records:
        lines += render_record(record)
    return "\n".join(lines).rstrip() + "\n"


def render_readme_section(records: list[dict]) -> str:
    lines = [README_START, ""]
    for record in records:
        for table in record.get("tables") or []:
            if table.get("readme"):
                lines += [f"**{record.get('title') or record.get('name')}**", ""]
                lines += render_table({**table, "caption": ""})
                lines += [f"<sub>{where(record)}. More in the "
                          "[benchmarks](docs/benchmarks.md).</sub>", ""]
    return "\n".join(lines + [README_END])


def readme_with(text: str, section: str) -> str:
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise SystemExit(f"README.md has no results section ({README_START!r} ... "
                         f"{README_END!r})")
    return text[:start] + section + text[end + len(README_END):]


def rendered(records: list[dict] | None = None) -> dict[Path, str]:
    """What docs/benchmarks.md and README.md should hold, from the JSON files."""
    records = load_results() if records is None else records
    readme = README.read_text(encoding="utf-8")
    return {DOCS_PAGE: render_page(records),
            README: readme_with(readme, render_readme_section(records))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that the docs match the JSON (exit 1 if not)")
    args = parser.parse_args(argv)
    stale = []
    for path, text in rendered().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'out of date' if args.check else 'rendered'}: {path.relative_to(REPO)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
