"""Engine speed options (precision, fused AdamW) and the language-modeling data path."""

import json
import math
import os

import numpy as np
import pytest
from conftest import REPO, TINY_DECODER, run_cli


def test_precision_auto_on_cpu_follows_native_bf16_and_fp16_needs_cuda(monkeypatch):
    import torch

    from zoo.errors import ZooError
    from zoo.train import precision
    from zoo.train.precision import resolve_precision

    cpu = torch.device("cpu")
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: False)
    assert resolve_precision("auto", cpu) == "fp32"
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    assert resolve_precision("auto", cpu) == "bf16"
    assert resolve_precision("fp32", cpu) == "fp32"
    assert resolve_precision("bf16", cpu) == "bf16"
    with pytest.raises(ZooError, match="CUDA"):
        resolve_precision("fp16", cpu)


def test_bad_precision_fails_with_exit_2(tiny_text):
    result = run_cli("run", "decoder-char", tiny_text, "--set", "precision=fp8")
    assert result.code == 2 and "precision" in result.err


@pytest.mark.slow
def test_bf16_autocast_on_cpu_trains_close_to_fp32(tiny_text):
    runs = {}
    for precision in ("fp32", "bf16"):
        result = run_cli(
            "run",
            "decoder-char",
            tiny_text,
            "--steps",
            10,
            "--json",
            "--set",
            f"precision={precision}",
            *TINY_DECODER,
        )
        assert result.code == 0, result
        runs[precision] = json.loads(result.out)["metrics"]
    assert math.isfinite(runs["bf16"]["val_loss"])
    assert runs["bf16"]["val_loss"] != runs["fp32"]["val_loss"]  # autocast really ran in bf16
    assert runs["bf16"]["val_loss"] == pytest.approx(runs["fp32"]["val_loss"], rel=0.02)


def test_windows_cover_every_target_once():
    from zoo.pipelines.language_modeling import windows

    for length in (2, 3, 16, 17, 18, 33, 50):
        ids = np.arange(length)
        inputs, targets, tail = windows(ids, 8)
        seen = list(targets.reshape(-1)) + (list(tail[1]) if tail else [])
        assert seen == list(range(1, length))  # each target exactly once, in order
        assert (targets == inputs + 1).all()
        if tail:
            assert (tail[1] == tail[0] + 1).all() and 0 < len(tail[0]) < 8


def test_evaluate_sums_the_loss_of_every_window():
    from zoo.pipelines.language_modeling import total_nll

    class Counting:  # a model whose loss is 1 nat per target: the sum is the target count
        def loss_sum(self, inputs, targets, mask=None):
            assert inputs.shape == targets.shape and inputs.shape[0] <= 4
            return float(targets.size), int(targets.size)

    total, count = total_nll(Counting(), np.arange(100), 8, 4)
    assert total == count == 99


@pytest.mark.slow
def test_reloaded_run_evaluates_at_its_training_precision(tiny_text):
    from zoo.operations.reload import load_trained

    result = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        3,
        "--json",
        "--set",
        "precision=fp32",
        *TINY_DECODER,
    )
    run_id = json.loads(result.out)["run_id"]
    assert load_trained(run_id).model.precision == "fp32"
    assert load_trained(run_id, precision="bf16").model.precision == "bf16"


@pytest.mark.slow
def test_compile_trains_on_the_cpu(tiny_text, monkeypatch):
    """--compile really compiles: torch.compile wraps the model, and the training steps run
    through the compiled wrapper (Dynamo traces frames)."""
    import torch
    from torch._dynamo.utils import counters

    compiled, real_compile = [], torch.compile

    def spy(module, *args, **kwargs):
        wrapper = real_compile(module, *args, **kwargs)
        compiled.append((module, wrapper))
        return wrapper

    monkeypatch.setattr(torch, "compile", spy)
    counters.clear()
    result = run_cli(
        "run", "decoder-char", tiny_text, "--steps", 2, "--json", "--compile", *TINY_DECODER
    )
    assert result.code == 0, result
    summary = json.loads(result.out)
    assert summary["status"] == "finished" and math.isfinite(summary["metrics"]["val_loss"])
    assert len(compiled) == 1 and isinstance(compiled[0][0], torch.nn.Module)
    assert sum(counters["frames"].values()) > 0  # the compiled forward was traced and run
    plain = run_cli("run", "decoder-char", tiny_text, "--steps", 2, "--json", *TINY_DECODER)
    assert plain.code == 0 and len(compiled) == 1  # without --compile, nothing is compiled


@pytest.mark.slow
def test_adamw_betas_are_training_settings(tiny_text):
    result = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        2,
        "--json",
        "--set",
        "beta2=0.99",
        *TINY_DECODER,
    )
    assert result.code == 0, result
    run_id = json.loads(result.out)["run_id"]
    from zoo.records.store import home

    config = json.loads((home() / run_id / "config.json").read_text())
    assert config["configs"]["train"]["beta2"] == 0.99
    bad = run_cli("run", "decoder-char", tiny_text, "--set", "beta1=1.5", *TINY_DECODER)
    assert bad.code == 2 and "beta1" in bad.err


def test_the_trainer_hands_the_betas_to_the_optimizer(tiny_text, monkeypatch):
    from zoo.train.torch_model import TorchModel

    seen = []
    original = TorchModel.configure_optimizer

    def spy(self, lr, weight_decay, betas=(0.9, 0.95)):
        original(self, lr, weight_decay, betas)
        seen.append(self.optimizer.param_groups[0]["betas"])

    monkeypatch.setattr(TorchModel, "configure_optimizer", spy)
    result = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        1,
        "--set",
        "beta1=0.8",
        "--set",
        "beta2=0.99",
        *TINY_DECODER,
    )
    assert result.code == 0, result
    assert seen == [(0.8, 0.99)]


def test_tokens_per_s_leaves_out_the_validation_estimates():
    import time

    from zoo.train.loop import TrainingOutcome, _validate

    result = TrainingOutcome(tokens=1000, train_time=3.0)
    _validate(lambda: (time.sleep(0.2), {"val_loss": 1.0})[1], result, None, True, None)
    assert result.validate_time >= 0.2 and result.curve[-1]["val_loss"] == 1.0
    assert result.tokens_per_s == pytest.approx(1000 / (3.0 - result.validate_time))
    assert TrainingOutcome(tokens=5, train_time=0.0).tokens_per_s == 0.0


def test_bf16_detection_agrees_with_the_cpu_flags_of_this_machine():
    """Not a mock: what the kernel reports in /proc/cpuinfo (avx512_bf16, amx_tile) and
    what auto precision picks here must agree."""
    from pathlib import Path

    import torch

    from zoo.train import precision

    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.is_file():
        pytest.skip("no /proc/cpuinfo on this system (Linux only)")
    flags = set()
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("flags"):
            flags |= set(line.partition(":")[2].split())
    native = bool(flags & {"avx512_bf16", "amx_tile", "amx_bf16"}) and not precision.isa_capped()
    print(f"CPU bf16 flags: {sorted(flags & {'avx512_bf16', 'amx_tile', 'amx_bf16'})}")
    assert precision.cpu_has_native_bf16() == native
    assert precision.resolve_precision("auto", torch.device("cpu")) == (
        "bf16" if native else "fp32"
    )


@pytest.mark.parametrize("native", [False, True], ids=["avx2-only", "native-bf16"])
def test_no_catalogue_preset_forces_a_precision(monkeypatch, native):
    """Every preset leaves precision to `auto`: bf16 where the CPU has it natively, fp32
    where bf16 would be emulated (about ten times slower)."""
    import tomllib

    import torch

    from zoo.train import precision

    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: native)
    presets = tomllib.loads((REPO / "registry.toml").read_text(encoding="utf-8"))["models"]
    assert "bert-finetune" in presets  # not vacuous: the preset that once forced bf16
    for name, preset in presets.items():
        chosen = (preset.get("set") or {}).get("precision", "auto")
        resolved = precision.resolve_precision(chosen, torch.device("cpu"))
        assert resolved == ("bf16" if native else "fp32"), (name, chosen)


def test_a_capped_instruction_set_counts_as_no_native_bf16(monkeypatch):
    """ONEDNN_MAX_CPU_ISA=AVX2 (or ATEN_CPU_CAPABILITY=avx2) makes torch compute as an
    AVX2-only CPU does: bf16 is emulated there, so auto must choose fp32."""
    import torch

    from zoo.train import precision

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert precision.cpu_has_native_bf16()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert not precision.cpu_has_native_bf16()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx512_core_amx")
    assert precision.cpu_has_native_bf16()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    assert not precision.cpu_has_native_bf16()


def test_the_avx2_hold_holds_every_kernel_library_torch_computes_with():
    """Held at AVX2, torch's matrix products (MKL, its BLAS) run AVX2 kernels too: a hold that
    left MKL at AVX-512 would time and round an fp32 step unlike an AVX2-only CPU."""
    import subprocess
    import sys

    import torch

    from zoo.core.machine import AVX2_HOLD

    if not torch.backends.mkl.is_available():
        pytest.skip("this torch computes without MKL")
    env = {**os.environ, **AVX2_HOLD, "MKL_VERBOSE": "1"}
    product = "import torch; torch.ones(8, 8) @ torch.ones(8, 8)"
    result = subprocess.run(
        [sys.executable, "-c", product], env=env, capture_output=True, text=True, timeout=120
    )
    banners = [line for line in result.stdout.splitlines() if line.startswith("MKL_VERBOSE")]
    if not banners:
        pytest.skip("this MKL prints no verbose banner, so its kernels cannot be read")
    banner = banners[0]
    assert "AVX2" in banner and "AVX-512" not in banner and "AVX512" not in banner, banner


def test_a_run_records_the_machine_and_the_precision_auto_chose(tiny_text):
    import torch

    from zoo.core.machine import FLAGS_THAT_MATTER
    from zoo.records.store import home
    from zoo.train.precision import resolve_precision

    result = run_cli("run", "decoder-char", tiny_text, "--steps", 2, "--json", *TINY_DECODER)
    assert result.code == 0, result
    run_id = json.loads(result.out)["run_id"]
    config = json.loads((home() / run_id / "config.json").read_text(encoding="utf-8"))
    machine = config["machine"]
    assert machine["precision"] == resolve_precision("auto", torch.device("cpu"))
    assert machine["cpu"] and set(machine["cpu_flags"]) <= set(FLAGS_THAT_MATTER)
    assert machine["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    shown = run_cli("show", run_id).out
    assert f"precision: {machine['precision']} on cpu" in shown and machine["cpu"] in shown
    listed = run_cli("runs", "--columns", "resolved_precision,cpu_kind", "--format", "json")
    (row,) = json.loads(listed.out)
    assert row["resolved_precision"] == machine["precision"] and row["cpu_kind"]


@pytest.mark.slow
def test_stored_figures_hold_where_the_cpu_computes_as_an_avx2_only_one():
    """Kept so on any machine: held at AVX2 (how torch computes on an AVX2-only CPU, bf16
    emulated), precision auto is fp32, and the runs stored by an older zoo (made in bf16)
    still reload, evaluate, predict and resume to their figures within tolerance."""
    import subprocess
    import sys

    from zoo.core.machine import AVX2_HOLD

    env = {**os.environ, **AVX2_HOLD}
    checks = [
        "tests/test_old_runs.py",
        "tests/test_engine_options.py::test_bf16_detection_agrees_with_the_cpu_flags_of_this_machine",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", *checks],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    code = "import torch; from zoo.train.precision import resolve_precision as r; "
    code += "print(r('auto', torch.device('cpu')))"
    auto = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert auto.stdout.strip() == "fp32", auto.stderr
