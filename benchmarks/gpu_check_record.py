"""How each step of benchmarks/gpu_check.sh ended, kept in benchmarks/results/gpu_check.json
(rewritten after every step, so a step that fails or runs out of time leaves the others'
records), and the test suite's counts from its JUnit reports.

    python benchmarks/gpu_check_record.py STEP STATUS SECONDS [NOTE]
    python benchmarks/gpu_check_record.py --junit REPORT.xml...
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, table, write_results  # noqa: E402

NAME = "gpu_check"
COLUMNS = [("step", "step"), ("status", "status"), ("seconds", "s", ",.0f"), ("note", "note")]


def recorded_steps() -> list[dict]:
    path = RESULTS / f"{NAME}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))["tables"][0]["rows"]
    except (OSError, ValueError, KeyError, IndexError):
        return []


def junit_counts(paths: list[str]) -> dict:
    """Tests run, failed, errors and skipped over the reports, with the first failures."""
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failing, missing = [], 0
    for path in paths:
        try:
            root = ElementTree.parse(path).getroot()
        except (OSError, ElementTree.ParseError):
            missing += 1
            continue
        for suite in root.iter("testsuite"):
            for key in counts:
                counts[key] += int(suite.get(key, 0))
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failing.append(f"{case.get('classname')}::{case.get('name')}")
    note = ", ".join(f"{value} {key}" for key, value in counts.items())
    if missing:
        note += f"; {missing} shard(s) wrote no report"
    if failing:
        note += "; failing: " + ", ".join(failing[:10])
    bad = counts["failures"] or counts["errors"] or missing or not counts["tests"]
    return {"step": "test counts", "status": "failed" if bad else "ok", "seconds": 0, "note": note}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--junit"]:
        row = junit_counts(argv[1:])
    elif len(argv) in (3, 4):
        row = {"step": argv[0], "status": argv[1], "seconds": float(argv[2]), "note": ""}
        row["note"] = argv[3] if len(argv) == 4 else ""
    else:
        print(__doc__, file=sys.stderr)
        return 2
    rows = [r for r in recorded_steps() if r.get("step") != row["step"]] + [row]
    if row["step"] == "environment":  # a new check starts: the last one's steps go
        rows = [row]
    write_results(
        NAME,
        title="Device checks (benchmarks/gpu_check.sh): how each step ended",
        about="The steps of one run of `bash benchmarks/gpu_check.sh`; their figures are in "
        "the sections of their own benchmarks.",
        command="bash benchmarks/gpu_check.sh",
        tables=[table("", COLUMNS, rows)],
        folder=RESULTS,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
