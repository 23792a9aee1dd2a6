"""benchmarks/gpu_check.sh, the device checks in one go: every step's end is recorded as it
ends (a failed, timed-out or skipped step included), and the test suite's counts come from
its JUnit reports. Its CPU-runnable parts run here with tiny settings."""

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

JUNIT = """<testsuites><testsuite tests="3" failures="1" errors="0" skipped="1">
<testcase classname="tests.test_a" name="test_one"/>
<testcase classname="tests.test_a" name="test_two"><failure message="no"/></testcase>
<testcase classname="tests.test_a" name="test_three"><skipped/></testcase>
</testsuite></testsuites>"""


def rows(folder: Path) -> dict:
    record = json.loads((folder / "gpu_check.json").read_text(encoding="utf-8"))
    return {row["step"]: row for row in record["tables"][0]["rows"]}


@pytest.fixture
def gpu_check_record(monkeypatch, tmp_path):
    """benchmarks/gpu_check_record.py, writing into tmp_path; sys.path and the imported
    scripts are put back afterwards."""
    monkeypatch.setattr(sys, "path", [str(REPO / "benchmarks"), *sys.path])
    before = set(sys.modules)
    module = importlib.import_module("gpu_check_record")
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    yield module
    for name in set(sys.modules) - before:
        if name in ("gpu_check_record", "common"):
            del sys.modules[name]


def test_each_step_is_recorded_as_it_ends_and_the_tests_are_counted(gpu_check_record, tmp_path):
    assert gpu_check_record.main(["environment", "ok", "0", "a GPU"]) == 0
    assert gpu_check_record.main(["packing", "timeout", "270"]) == 0
    assert gpu_check_record.main(["packing", "ok", "200", "again"]) == 0  # replaced, not added
    (tmp_path / "tests-0.xml").write_text(JUNIT, encoding="utf-8")
    missing = str(tmp_path / "tests-1.xml")
    assert gpu_check_record.main(["--junit", str(tmp_path / "tests-0.xml"), missing]) == 0
    steps = rows(tmp_path)
    assert list(steps) == ["environment", "packing", "test counts"]
    assert steps["packing"]["status"] == "ok" and steps["packing"]["note"] == "again"
    counts = steps["test counts"]
    assert counts["status"] == "failed"
    assert counts["note"].startswith("3 tests, 1 failures, 0 errors, 1 skipped")
    assert "1 shard(s) wrote no report" in counts["note"]
    assert "tests.test_a::test_two" in counts["note"]
    gpu_check_record.main(["environment", "ok", "0", "a new check"])  # starts over
    assert list(rows(tmp_path)) == ["environment"]


@pytest.mark.slow
def test_the_script_runs_its_cpu_parts_and_records_every_step(tmp_path):
    env = {
        **os.environ,
        "GPU_CHECK_DEVICE": "cpu",
        "GPU_CHECK_MODEL": "digits-char",
        "GPU_CHECK_DATASET": "digits",
        "GPU_CHECK_SEEDS": "2",  # the stacked variant needs two seeds
        "GPU_CHECK_STEPS": "2",
        "GPU_CHECK_TESTS": "tests/test_module_names.py",
        "GPU_CHECK_SHARDS": "1",
        "GPU_CHECK_RENDER": "0",
        "ZOO_BENCH_RESULTS": str(tmp_path),
        "PYTHON": sys.executable,
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(
        ["bash", "benchmarks/gpu_check.sh"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    steps = rows(tmp_path)
    assert steps["packing"]["status"] == "ok", steps
    assert steps["nanogpt"]["status"] == "skipped"  # no GPU here
    assert steps["tests"]["status"] == "ok" and steps["test counts"]["status"] == "ok"
    record = json.loads((tmp_path / "sweep_jobs.json").read_text(encoding="utf-8"))
    phases = record["tables"][1]["rows"]
    assert {row["cells"] for row in phases} == {2} and all(row["train"] > 0 for row in phases)
