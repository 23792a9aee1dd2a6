"""Render the current benchmark figures into the docs: benchmarks/results/*.json ->
docs/benchmarks.md, the tables marked ``readme`` into README.md's results section, and a
record's tables into any page of docs/ that asks for them between
``<!-- benchmark NAME -->`` and ``<!-- end benchmark -->``.

    python scripts/render_benchmarks.py            # rewrite both
    python scripts/render_benchmarks.py --check    # exit 1 if either is out of date

The JSON files are the data (written by the scripts in benchmarks/ through
``benchmarks/common.py``); the docs only show what they hold.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
DOCS_PAGE = REPO / "docs" / "benchmarks.md"
README = REPO / "README.md"
README_START = "<!-- results: rendered by scripts/render_benchmarks.py from benchmarks/results -->"
README_END = "<!-- end of results -->"

# the order of sections on the page; results not named here follow, by name
ORDER = [
    "classification",
    "significance",
    "significance_sequential",
    "ensemble_weights",
    "ensemble_weights_ensemble_pretrained",
    "transfer",
    "finetune_recipe",
    "time_to_quality",
    "time_to_quality_families",
    "train",
    "precision",
    "finetune_time",
    "nanogpt",
    "nanogpt_gpu",
    "nanogpt_gpu_eager",
    "nanogpt_gpu_compile",
    "transformers",
    "digits",
    "tokenizer",
    "data",
    "generate",
    "eval",
    "memory",
    "checkpoint",
    "numpy",
    "layer_norm",
    "attention",
    "sweep_jobs",
    "sweep_jobs_cuda",
    "gpu_check",
    "contention",
    "list",
]

INTRO = """\
# Benchmarks

The current figures, rendered from `benchmarks/results/*.json` by
`scripts/render_benchmarks.py`; each benchmark script in `benchmarks/` writes its file with
the machine, the versions and the date. Absolute figures depend on the machine and its
load (each record gives the load average it was measured at; on a busy machine wall times
are pessimistic): compare variants as the ratios each benchmark measures side by side.
Figures carried over from an earlier measurement say so, with their original machine and
date.
"""


# titles for results written without one
TITLES = {
    "classification": "Classification: each architecture, their ensemble and a linear SVM "
    "(mean ± std over seeds)"
}
# results whose main tables also go into README.md (besides tables marked "readme")
README_RECORDS = ("classification",)
# the keys of a record that describe it rather than hold figures
META = (
    "name",
    "benchmark",
    "title",
    "about",
    "command",
    "date",
    "machine",
    "versions",
    "notes",
    "provenance",
    "tables",
    "readme",
)


def load_results(folder: Path = RESULTS) -> list[dict]:
    records = []
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        record.setdefault("name", record.get("benchmark") or path.stem)
        record.setdefault("title", TITLES.get(record["name"], record["name"]))
        records.append(record)
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(records, key=lambda r: (rank.get(r["name"], len(ORDER)), r["name"]))


def cell(value, spec: str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict) and "mean" in value:  # a summary over seeds
        std = value.get("std")
        text = cell(value["mean"], spec)
        return text + (f" ± {cell(std, spec)}" if std else "")
    if isinstance(value, (dict, list)):
        return cell(json.dumps(value), None)
    if isinstance(value, (int, float)) and spec:
        return format(value, spec)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def default_spec(key: str) -> str | None:
    """How a column without a format of its own is shown: accuracies as percentages."""
    if key.endswith("accuracy"):
        return ".2%"
    if key == "seconds":
        return ",.0f"
    return None


def render_table(table: dict) -> list[str]:
    columns = [
        (c[0], c[1] if len(c) > 1 else c[0], c[2] if len(c) > 2 else None)
        for c in table.get("columns") or []
    ]
    rows = table.get("rows") or []
    if not columns and rows:
        columns = [(key, key, default_spec(key)) for key in rows[0]]
    lines = []
    if table.get("caption"):
        lines += [table["caption"], ""]
    lines.append("| " + " | ".join(heading for _, heading, _ in columns) + " |")
    lines.append("| " + " | ".join("---" if i == 0 else "---:" for i in range(len(columns))) + " |")
    for row in rows:
        lines.append("| " + " | ".join(cell(row.get(key), spec) for key, _, spec in columns) + " |")
    return lines + [""]


def is_row(value) -> bool:
    return isinstance(value, dict) and bool(value)


def rows_table(caption: str, rows: list[dict], main: bool = False) -> dict:
    """A table from rows of figures; columns whose values are lists (run ids, say) are left
    out."""
    keys = []
    for row in rows:
        keys += [k for k, v in row.items() if k not in keys and not isinstance(v, list)]
    columns = [[k, k, default_spec(k)] for k in keys]
    return {"caption": caption, "columns": columns, "rows": rows, "main": main}


def tables_of(record: dict) -> list[dict]:
    """The record's tables: its own ``tables``, or ones read off the shape of its figures
    (a dict of row lists is one table per key; a dict of dicts is rows by key; scalars are
    one key / value table)."""
    if record.get("tables") is not None:
        return record["tables"]
    tables, scalars = [], []
    for key, value in record.items():
        if key in META:
            continue
        if (
            isinstance(value, dict)
            and value
            and all(isinstance(v, list) and all(map(is_row, v)) for v in value.values())
        ):
            tables += [rows_table(f"{key}: {sub}", rows, main=True) for sub, rows in value.items()]
        elif isinstance(value, list) and value and all(map(is_row, value)):
            tables.append(rows_table(key, value, main=True))
        elif isinstance(value, dict) and value and all(map(is_row, value.values())):
            tables.append(rows_table(key, [{key: k, **v} for k, v in value.items()]))
        elif isinstance(value, dict):
            tables.append(
                {
                    "caption": key,
                    "columns": [["key", key], ["value", "value"]],
                    "rows": [{"key": k, "value": v} for k, v in value.items()],
                }
            )
        else:
            scalars.append({"key": key, "value": value})
    if scalars:
        tables.append(
            {"caption": "", "columns": [["key", "figure"], ["value", "value"]], "rows": scalars}
        )
    return tables


def where(record: dict) -> str:
    machine = record.get("machine") or {}
    versions = record.get("versions") or {}
    parts = [machine.get("cpu") or "unknown CPU"]
    if machine.get("cpu_kind"):  # what tells two CPUs' figures apart (zoo.core.machine)
        parts[0] += f" ({machine['cpu_kind']})"
    if machine.get("cores"):
        parts[0] += f", {machine['cores']} cores"
    if machine.get("held_at"):
        parts.append(f"torch held at {machine['held_at']}")
    if machine.get("auto_precision"):
        parts.append(f"precision auto = {machine['auto_precision']}")
    if machine.get("gpu"):
        parts.append(machine["gpu"])
    if machine.get("load"):
        parts.append("load average " + " ".join(f"{x:g}" for x in machine["load"]))
    elif machine.get("load_before"):
        parts.append(str(machine["load_before"]))
    if machine.get("omp_num_threads"):
        parts.append(f"OMP_NUM_THREADS={machine['omp_num_threads']}")
    if machine.get("note"):
        parts.append(str(machine["note"]))
    software = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
    return f"{record.get('date', 'undated')}; {'; '.join(parts)}; {software}"


def caveats(record: dict) -> list[str]:
    """What a reader needs beside a record's figures: what was measured and how (precision,
    recipe), its notes, and where carried-over figures come from."""
    texts = [record.get("about"), *(record.get("notes") or [])]
    if record.get("provenance"):
        texts.append(f"Provenance: {record['provenance']}")
    texts = [text.strip() for text in texts if text]
    return [" ".join(texts), ""] if texts else []


def render_record(record: dict) -> list[str]:
    lines = [f"## {record.get('title') or record.get('name')}", ""]
    if record.get("about"):
        lines += [record["about"], ""]
    for table in tables_of(record):
        lines += render_table(table)
    for note in record.get("notes") or []:
        lines += [note, ""]
    lines.append(f"Measured {where(record)}.")
    if record.get("command"):
        lines[-1] += f" Command: `{record['command']}`."
    if record.get("provenance"):
        lines[-1] += f" Provenance: {record['provenance']}"
    return lines + [""]


# records too long for this page: it links to the page that embeds them
LINKED = {"hf_matrix": "architectures/transformers-matrix.md"}


def render_page(records: list[dict]) -> str:
    lines = [INTRO]
    for record in records:
        if record["name"] in LINKED:
            title = record.get("title") or record["name"]
            lines += [
                f"## {title}",
                "",
                f"On its own page: [{title}]({LINKED[record['name']]}).",
                "",
            ]
        else:
            lines += render_record(record)
    return "\n".join(lines).rstrip() + "\n"


def render_readme_section(records: list[dict]) -> str:
    """The README's tables, each record's followed by its caveats (about, notes,
    provenance) and where it was measured: a figure never travels without them."""
    lines = [README_START, ""]
    for record in records:
        tables = [
            table
            for table in tables_of(record)
            if table.get("readme") or (record["name"] in README_RECORDS and table.get("main"))
        ]
        for table in tables:
            lines += [
                f"**{record.get('title') or record['name']}**"
                + (f" ({table['caption']})" if table.get("caption") else ""),
                "",
            ]
            lines += render_table({**table, "caption": ""})
        if tables:
            lines += caveats(record)
            more = "More in the [benchmarks](docs/benchmarks.md)."
            lines += [f"<sub>{where(record)}. {more}</sub>", ""]
    return "\n".join(lines + [README_END])


def readme_with(text: str, section: str) -> str:
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise SystemExit(f"README.md has no results section ({README_START!r} ... {README_END!r})")
    return text[:start] + section + text[end + len(README_END) :]


EMBEDDED = re.compile(
    r"^<!-- benchmark (?P<name>[\w-]+) -->\n.*?^<!-- end benchmark -->$", re.MULTILINE | re.DOTALL
)


def with_embedded(text: str, records: list[dict]) -> str:
    """`text` with each ``<!-- benchmark NAME -->`` section holding NAME's tables, notes and
    where they were measured (its title and description are the page's own)."""
    by_name = {record["name"]: record for record in records}

    def section(match) -> str:
        name = match["name"]
        if name not in by_name:
            raise SystemExit(f"a page asks for benchmark {name!r}, which has no results file")
        body = render_record(by_name[name])[2:]  # without its heading: the page has its own
        return "\n".join([f"<!-- benchmark {name} -->", "", *body, "<!-- end benchmark -->"])

    return EMBEDDED.sub(section, text)


def rendered(records: list[dict] | None = None) -> dict[Path, str]:
    """What docs/benchmarks.md, README.md and the pages with embedded benchmark sections
    should hold, from the JSON files."""
    records = load_results() if records is None else records
    readme = README.read_text(encoding="utf-8")
    out = {
        DOCS_PAGE: render_page(records),
        README: readme_with(readme, render_readme_section(records)),
    }
    for page in sorted((REPO / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        if page != DOCS_PAGE and EMBEDDED.search(text):
            out[page] = with_embedded(text, records)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument(
        "--check",
        action="store_true",
        help="only check that the docs match the JSON (exit 1 if not)",
    )
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
