"""`--jobs auto` (zoo.sweeps.auto_jobs): on a GPU the first cell measures its memory and
the GPU's use, and the sweep grows to the workers those allow, saying what it chose and
recording it with each run; on the CPU one worker per idle core. The CUDA queries are
mocked: these run on any machine."""

import time

import pytest
import torch
from conftest import run_cli

from zoo.core.phases import PhaseClock, measuring, phase
from zoo.sweeps import auto_jobs
from zoo.sweeps.auto_jobs import CONTEXT_BYTES, choose_gpu_workers, describe_choice
from zoo.sweeps.executors import make_executor
from zoo.sweeps.local import ProcessExecutor, available_cores

GIB = 2**30


def probe(peak=0.3 * GIB, free=70 * GIB, utilization=12.0):
    return {
        "peak_bytes": int(peak),
        "free_bytes": int(free),
        "total_bytes": 80 * GIB,
        "utilization": utilization,
        "name": "a mocked GPU",
    }


def test_the_gpu_is_shared_by_as_many_workers_as_its_use_memory_and_cores_allow():
    jobs, choice = choose_gpu_workers(probe(), cores=16, cells=32, host_most=None)
    assert (jobs, choice["bound_by"]) == (7, "utilisation")  # 90% over 12% each
    jobs, choice = choose_gpu_workers(probe(utilization=None), cores=16, cells=32, host_most=100)
    assert (jobs, choice["bound_by"]) == (16, "cores")  # use unknown: a worker per core
    jobs, choice = choose_gpu_workers(probe(peak=20 * GIB), cores=16, cells=32, host_most=None)
    room = int(70 * GIB * 0.9) // (20 * GIB + CONTEXT_BYTES)
    assert (jobs, choice["bound_by"]) == (1 + room, "memory") and jobs == 4
    jobs, _ = choose_gpu_workers(probe(utilization=1.0), cores=64, cells=5, host_most=None)
    assert jobs == 5  # never more workers than cells
    jobs, _ = choose_gpu_workers(probe(utilization=100.0), cores=16, cells=32, host_most=None)
    assert jobs == 1  # one cell fills the GPU already
    line = describe_choice(choose_gpu_workers(probe(), cores=16, cells=32, host_most=None)[1])
    assert line.startswith("--jobs auto: 7 workers share the GPU (bound by utilisation)")
    assert "0.30 GiB" in line and "12% busy" in line


def test_auto_on_a_gpu_measures_one_cell_then_grows_and_records_its_choice(monkeypatch):
    monkeypatch.setattr("zoo.sweeps.local.available_cores", lambda: 16)
    executor = make_executor("auto", "local", None, None, None, "cuda")
    executor.fit(32)
    assert (executor.jobs, executor.threads) == (1, 1)
    assert "measuring one cell's GPU memory and use first" in executor.describe()
    assert executor.record() == {"jobs": "auto", "probe": True}
    assert executor.learn({"status": "failed"}) is None and executor.jobs == 1  # no figures
    said = executor.learn({"status": "finished", "gpu": probe()})
    assert executor.jobs == 7 and said.startswith("--jobs auto: 7 workers share the GPU")
    record = executor.record()
    assert record["jobs"] == 7 and record["chosen_by"] == "--jobs auto"
    assert record["peak_bytes"] == probe()["peak_bytes"] and record["utilization"] == 12.0
    assert executor.learn({"status": "finished", "gpu": probe(utilization=50.0)}) is None


def test_auto_on_the_cpu_is_a_one_thread_worker_per_idle_core(monkeypatch):
    monkeypatch.setattr("zoo.sweeps.local.available_cores", lambda: 4)
    executor = ProcessExecutor("auto", device="cpu")
    assert executor.jobs == 4 and executor.threads == 1
    executor.fit(1)
    assert executor.jobs == 1 and executor.record()["bound_by"] == "cells"


def test_a_number_of_jobs_on_the_cpu_is_as_before():
    executor = ProcessExecutor(2, device="cpu")
    assert executor.threads == max(1, available_cores() // 2) and executor.record() is None


def test_the_probe_samples_the_gpus_use_only_while_the_cell_trains(monkeypatch):
    readings = iter([30.0, 50.0] + [40.0] * 1000)
    for name, value in {
        "init": lambda: None,
        "reset_peak_memory_stats": lambda: None,
        "utilization": lambda: next(readings),
        "mem_get_info": lambda: (60 * GIB, 80 * GIB),
        "max_memory_reserved": lambda: GIB // 2,
        "get_device_name": lambda: "a mocked GPU",
    }.items():
        monkeypatch.setattr(torch.cuda, name, value)
    monkeypatch.setattr(auto_jobs, "SAMPLE_SECONDS", 0.01)
    clock = PhaseClock()
    with measuring(clock), auto_jobs.gpu_probe(clock) as report:
        with phase("data"):
            time.sleep(0.1)  # not sampled: the GPU is idle while the data loads
        assert report == {}
        with phase("train"):
            time.sleep(0.2)
    assert report["peak_bytes"] == GIB // 2 and report["free_bytes"] == 60 * GIB
    assert 30.0 <= report["utilization"] <= 50.0
    assert report["name"] == "a mocked GPU"


def test_jobs_is_a_positive_number_or_auto(tiny_text):
    result = run_cli("sweep", "decoder-char", "--on", tiny_text, "--jobs", "many")
    assert result.code == 2
    assert "expected a positive integer or auto, got 'many'" in result.err
    result = run_cli("sweep", "decoder-char", "--on", tiny_text, "--jobs", "auto", "--dry-run")
    assert result.code == 0, result


@pytest.mark.parametrize("jobs", [0, -1, 1.5, "some"])
def test_the_python_api_refuses_a_bad_jobs(jobs, tiny_text):
    import zoo

    with pytest.raises(zoo.ZooError):
        zoo.sweep("decoder-char", on=str(tiny_text), workers=zoo.Workers(jobs), dry_run=True)
