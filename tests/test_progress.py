"""Training progress wherever the output goes: lines with step, loss, learning rate,
tokens/s, elapsed time and ETA when the output is redirected, every --log-every steps or
seconds (about ten a run by default), each starting with its member's or cell's label; a
bar and no lines on a terminal; nothing with --quiet, which prints only the result."""

import io
import re
import subprocess
import sys

import pytest
from conftest import TINY_DECODER, run_cli, without

from zoo.messages import reporting_to
from zoo.train.progress import Progress, parse_log_every

LINE = re.compile(
    r"^(\[(?P<label>[^\]]+)\] )?step (?P<step>\d+)/(?P<total>\d+)  loss \S+  lr \S+  "
    r"tokens/s [\d,]+  elapsed \S+  eta \S+"
)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def steps_reported(total, *, stdout=None, stderr=None, validate_at=(), **options) -> list[str]:
    """The progress lines a run of ``total`` steps reports on zoo.train.progress's logger."""
    lines = io.StringIO()
    with reporting_to(lines):
        with Progress(
            total, stdout=stdout or io.StringIO(), stderr=stderr or io.StringIO(), **options
        ) as progress:
            for step in range(1, total + 1):
                figures = {"val_loss": 1.5} if step in validate_at else None
                progress.step(step, 2.0, 1e-3, 1000.0, step * 0.1, figures)
    return lines.getvalue().splitlines()


def test_redirected_output_gets_about_ten_lines_and_one_per_validation():
    lines = steps_reported(200, validate_at=(50, 125))
    steps = [int(LINE.match(line)["step"]) for line in lines]
    assert steps == [20, 40, 50, 60, 80, 100, 120, 125, 140, 160, 180, 200]
    assert "val_loss 1.5" in lines[2] and "val_loss" not in lines[0]
    # 20 steps in 2 s: 180 left at that pace is 18 s
    assert lines[0] == "step 20/200  loss 2  lr 1.00e-03  tokens/s 1,000  elapsed 2s  eta 18s"


def test_log_every_steps_or_seconds_and_a_label():
    lines = steps_reported(12, log_every=5, label="member 2/3 lstm-wordpunct")
    assert [int(LINE.match(line)["step"]) for line in lines] == [5, 10, 12]
    assert all(LINE.match(line)["label"] == "member 2/3 lstm-wordpunct" for line in lines)
    assert len(steps_reported(12, log_every=3600.0)) == 1  # only the last step
    assert parse_log_every("30s") == 30.0 and parse_log_every("50") == 50
    for bad in ("0", "-5", "5.5", "soon", "1e99999s"):
        with pytest.raises(ValueError):
            parse_log_every(bad)


def test_a_time_budget_bounds_the_eta():
    (last, *_) = steps_reported(1000, log_every=1000, time_budget=5.0)[-1:]
    assert last.endswith("eta 0s")
    lines = steps_reported(1000, log_every=100, time_budget=60.0)
    assert lines[0].endswith("elapsed 10s  eta 50s")  # the budget ends before the steps


def test_a_terminal_gets_the_bar_and_quiet_gets_nothing():
    assert steps_reported(20, stdout=Terminal(), stderr=Terminal()) == []
    assert steps_reported(20, quiet=True) == []
    err = Terminal()
    assert len(steps_reported(20, stderr=err)) == 10  # `zoo run ... > log` on a terminal
    assert "train" in err.getvalue()  # and the bar there


@pytest.mark.slow
def test_a_run_with_redirected_output_reports_progress_before_its_result(tiny_text):
    result = run_cli(
        "run", "decoder-char", tiny_text, "--steps", 20, *without(TINY_DECODER, "eval_interval"),
        "--set", "eval_interval=10", "--device", "cpu", "--log-every", 4,
    )  # fmt: skip
    assert result.code == 0, result
    lines = result.out.splitlines()
    first_result = next(i for i, line in enumerate(lines) if line.startswith("run "))
    progress = [LINE.match(line) for line in lines[:first_result]]
    assert all(progress) and [int(m["step"]) for m in progress] == [4, 8, 10, 12, 16, 20]
    assert "--- sample 1 ---" in result.out


@pytest.mark.slow
def test_quiet_prints_only_the_result(tiny_text):
    result = run_cli("run", "decoder-char", tiny_text, "--steps", 4, *TINY_DECODER, "--quiet")
    assert result.code == 0, result
    assert result.out.startswith("run ") and "sample" not in result.out
    assert not any(LINE.match(line) for line in result.out.splitlines())
    assert result.err == ""


def test_log_every_must_be_steps_or_seconds(tiny_text):
    result = run_cli("run", "decoder-char", tiny_text, "--log-every", "soon")
    assert result.code == 2 and "steps (50) or seconds (30s)" in result.err


@pytest.mark.slow
def test_a_redirected_command_writes_progress_lines_to_its_log(tiny_text, tmp_path):
    log = tmp_path / "log"
    with open(log, "w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "zoo", "run", "decoder-char", str(tiny_text), "--steps", "40",
             *without(TINY_DECODER, "eval_interval"), "--set", "eval_interval=20",
             "--device", "cpu"],
            stdout=out, stderr=subprocess.PIPE, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    first_result = next(i for i, line in enumerate(lines) if line.startswith("run "))
    assert len([line for line in lines[:first_result] if LINE.match(line)]) >= 2
