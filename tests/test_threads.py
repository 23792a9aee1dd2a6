"""zoo chooses a training process's threads from the CPUs it may use and the load on them,
unless the user chose; a run records the count and a resume trains on it again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from zoo.core import threads
from zoo.core.threads import ThreadChoice, cgroup_cpu_quota, choose_threads


def choose(idle, usable=2, environ=None, requested=None):
    return choose_threads(requested, environ=environ or {}, sample=lambda: idle, usable=usable)


def test_a_quiet_machine_gets_every_usable_cpu_with_openmps_default_waiting():
    choice = choose(idle=1.97)
    assert (choice.threads, choice.wait_policy, choice.source) == (2, None, "auto")


def test_one_busy_neighbour_on_two_cpus_leaves_one_thread():
    assert choose(idle=1.02).threads == 1
    assert choose(idle=0.0).threads == 1  # never fewer than one


def test_partly_shared_cpus_wait_passively():
    choice = choose(idle=6.2, usable=8)
    assert (choice.threads, choice.wait_policy) == (6, "PASSIVE")


def test_the_users_choice_wins_over_the_sample():
    sampled = []
    assert choose(idle=2.0, environ={"OMP_NUM_THREADS": "3"}).threads == 3
    choice = choose_threads(4, environ={"OMP_NUM_THREADS": "3"}, sample=sampled.append, usable=2)
    assert (choice.threads, choice.source, sampled) == (4, "--threads", [])
    # a wait policy the user set is left alone
    assert choose(idle=6.2, usable=8, environ={"OMP_WAIT_POLICY": "ACTIVE"}).wait_policy is None


def test_cgroup_quotas_cap_the_usable_cpus(tmp_path):
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_quota(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota(tmp_path) is None
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000")
    assert cgroup_cpu_quota(tmp_path) == 3.0


def test_cpu_times_count_only_the_cpus_of_the_affinity_mask():
    stat = (
        "cpu  10 0 10 100 0 0 0 0 0 0\n"
        "cpu0 5 0 5 50 10 0 0 0 0 0\n"
        "cpu1 1 0 1 1000 0 0 0 0 0 0\n"
        "intr 1 2 3\n"
    )
    assert threads._cpu_times(stat, {0}) == (60, 70)


def test_a_passing_command_is_not_taken_for_a_busy_neighbour(monkeypatch):
    # cumulative (busy, idle) ticks of each CPU at the sample's five reads: CPU 0 is busy in
    # every window (a neighbour), CPU 1 only in the first two (a passing command)
    reads = [
        ((0, 0), (0, 0)),
        ((5, 0), (5, 0)),
        ((10, 0), (10, 0)),
        ((15, 0), (10, 5)),
        ((20, 0), (10, 10)),
    ]
    texts = iter(
        "".join(f"cpu{i} {busy} 0 0 {idle} 0 0 0 0\n" for i, (busy, idle) in enumerate(read))
        for read in reads
    )

    class FakeStat:
        def __init__(self, path):
            pass

        def read_text(self):
            return next(texts)

    monkeypatch.setattr(threads, "Path", FakeStat)
    monkeypatch.setattr(threads.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert threads.idle_cpus(windows=4) == 1.0  # one CPU idle in the quietest window, not 0.5


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no affinity masks here")
def test_the_choice_respects_an_affinity_mask_and_the_users_variable():
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from zoo.core.threads import choose_threads; c = choose_threads(); "
        "print(c.usable, c.threads)"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["1", "1"], out.stderr
    env["OMP_NUM_THREADS"] = "5"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["1", "5"], out.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("taskset") is None, reason="no taskset")
def test_zoo_run_under_taskset_trains_on_one_thread_and_records_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-m", "zoo", "run", "digits-char", "digits"]
        + ["--steps", "2", "--quiet", "--json", "--verbose"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "threads: 1 (" in out.stderr
    run_id = json.loads(out.stdout)["run_id"]
    config = json.loads((tmp_path / "home" / "runs" / run_id / "config.json").read_text())
    assert config["threads"]["threads"] == 1 and config["threads"]["usable"] == 1


def test_a_resumed_run_trains_on_its_recorded_count(monkeypatch):
    applied = []
    monkeypatch.setattr(threads, "apply_threads", applied.append)
    monkeypatch.setattr(threads, "_chosen", None)
    choice = threads.use_recorded_threads(ThreadChoice(3, None, 8, 3.0, "auto").record())
    assert choice.threads == 3 and choice.source == "recorded" and applied == [choice]
    assert threads.settle_threads() is choice  # later calls in the process keep it
    assert threads.use_recorded_threads({}) is None  # a run from before threads were recorded
