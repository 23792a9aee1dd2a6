"""Training speed side by side with nanoGPT's own train.py, at nanoGPT's CPU or GPU shape.

nanoGPT's README trains character-level Shakespeare on a CPU with 4 layers of width 128,
block 64, batch 12, no dropout; zoo's decoder-char-nanogpt preset is that shape. This
script runs nanoGPT's train.py itself (from a checkout you give it: its source is never
part of zoo) and zoo's training step (built exactly as `zoo run` builds it, through
bench_train.Variant), alternating rounds of steps in fresh processes, and prints the ratio
of the medians of milliseconds per step. Then model FLOPs utilisation against the bf16 (and
fp32) matrix-multiply peak measured here, and where a step's time goes: on the CPU, both
sides' steps profiled in one process and summed by kernel kind (a table of the results); on a
GPU, a torch profiler summary of zoo's step.

    git clone https://github.com/karpathy/nanoGPT /tmp/nanoGPT
    OMP_NUM_THREADS=1 python benchmarks/bench_nanogpt.py --nanogpt /tmp/nanoGPT
    NANOGPT_DIR=/tmp/nanoGPT python benchmarks/bench_nanogpt.py --rounds 5 --steps 80
    python benchmarks/bench_nanogpt.py --nanogpt /tmp/nanoGPT --shape gpu [--compile]

On a GPU (``--shape gpu``) both sides run nanoGPT's GPU recipe (its config file as it is:
6 x 384, block 256, batch 64, dropout 0.2, bf16) and zoo its ``decoder-char-gpu`` preset,
``--compile`` compiles both, and ``--set KEY=VALUE`` changes zoo's side (``--set
cuda_graph=false``, say). There, every step of either side ends by reading its loss, so the
wall clock is the GPU's time; MFU is per wall-clock millisecond against an 8192^3 bf16
product, and the profile also says how busy the GPU was.

nanoGPT's data is made by its own data/shakespeare_char/prepare.py (train.bin and val.bin
of uint16 character ids, 90% / 10%, and meta.pkl) from zoo's mirror of Tiny Shakespeare,
written as the input.txt it would otherwise download, in a temporary folder next to copies
of train.py, model.py and configurator.py. Both sides run
with the threads OMP_NUM_THREADS gives them (set it to 1 on a shared machine). nanoGPT's
per-iteration time is the one it prints (`time ...ms`, batch fetching included); zoo's is
measured around the same work (batch sampling and the optimizer step). On a loaded machine wall-clock
times swing with the other processes, so the script also reports CPU milliseconds per
step: the CPU time of a run of 2N steps less that of a run of N steps, over N (start-up and
data preparation cancel out).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, header, load, write_results  # noqa: E402
from common import table as results_table  # noqa: E402

# nanoGPT's README: "python train.py config/train_shakespeare_char.py --device=cpu
# --compile=False --eval_iters=20 --log_interval=1 --block_size=64 --batch_size=12
# --n_layer=4 --n_head=4 --n_embd=128 --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0".
# On a GPU its config file alone is the recipe (6 x 384, block 256, batch 64, dropout 0.2,
# bf16). Evaluation is pushed past the timed iterations (it would land inside one
# iteration's time).
TIMING_ARGS = ["--eval_iters=1", "--eval_interval=1000000", "--log_interval=1"]
SHAPES = {
    "cpu": (
        "decoder-char-nanogpt",
        [
            "--device=cpu",
            "--block_size=64",
            "--batch_size=12",
            "--n_layer=4",
            "--n_head=4",
            "--n_embd=128",
            "--lr_decay_iters=2000",
            "--dropout=0.0",
        ],
    ),
    "gpu": ("decoder-char-gpu", ["--device=cuda", "--dtype=bfloat16"]),
}
NANOGPT_FILES = ("train.py", "model.py", "configurator.py", "config/train_shakespeare_char.py")
PREPARE = "data/shakespeare_char/prepare.py"
ZOO_SETTINGS: list[str] = []  # --set KEY=VALUE for zoo's side, passed on to its workers
ITERATION = re.compile(r"^iter (\d+): loss [\d.]+, time ([\d.]+)ms")


def shakespeare_text() -> str:
    """Tiny Shakespeare whole (1,115,394 characters) from zoo's mirror: its splits, in order."""
    from zoo.core.loading import get_zoo
    from zoo.data import datasets
    from zoo.data.encoded import column_of

    zoo = get_zoo()
    loaded = datasets.load(datasets.resolve("shakespeare", zoo), zoo, quiet=True)
    return "".join(
        "".join(column_of(loaded.split(role), loaded.text_column).to_pylist())
        for role in ("train", "validation", "test")
    )


def prepare_nanogpt(checkout: Path, work: Path) -> None:
    """nanoGPT's files, and its shakespeare_char data made by its own prepare.py from the
    mirror's text (given as the input.txt it would otherwise download)."""
    for name in (*NANOGPT_FILES, PREPARE):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(checkout / name, work / name)
    (work / PREPARE).with_name("input.txt").write_text(shakespeare_text(), encoding="utf-8")
    out = subprocess.run([sys.executable, PREPARE], cwd=work, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"nanoGPT's prepare.py failed:\n{out.stderr[-2000:]}")


def run_child(command: list[str], cwd: Path) -> tuple[str, float]:
    """A child process's output and the CPU seconds (user + system) it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out, err = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed:\n{err[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # waited-for children, summed
    return out, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def run_nanogpt(
    work: Path, steps: int, warmup: int, shape: str, compile: bool
) -> tuple[list[float], float]:
    """nanoGPT's printed ms of each timed iteration, and the process's CPU seconds."""
    out, cpu = run_child(
        [
            sys.executable,
            "train.py",
            "config/train_shakespeare_char.py",
            *SHAPES[shape][1],
            *TIMING_ARGS,
            f"--compile={compile}",
            f"--max_iters={steps + warmup}",
            f"--out_dir={work / 'out'}",
        ],
        work,
    )
    times = [(int(m[1]), float(m[2])) for m in map(ITERATION.match, out.splitlines()) if m]
    return [ms for it, ms in times if it >= warmup], cpu


def run_zoo(steps: int, warmup: int, shape: str, compile: bool) -> tuple[list[float], float]:
    settings = [a for kv in ZOO_SETTINGS for a in ("--set", kv)]
    out, cpu = run_child(
        [
            sys.executable,
            __file__,
            "--zoo-worker",
            str(steps),
            "--warmup",
            str(warmup),
            "--shape",
            shape,
            *(["--compile"] if compile else []),
            *settings,
        ],
        REPO,
    )
    return json.loads(out.strip().splitlines()[-1]), cpu


def run_side(
    side: str, work: Path, steps: int, warmup: int, shape: str, compile: bool
) -> tuple[list[float], float]:
    if side == "nanoGPT":
        return run_nanogpt(work, steps, warmup, shape, compile)
    return run_zoo(steps, warmup, shape, compile)


def zoo_variant(shape: str, compile: bool = False):
    from bench_train import Variant, prepare_data

    from zoo.core.config import parse_assignment

    tokenizer, ids = prepare_data("shakespeare")
    overrides = {**dict(map(parse_assignment, ZOO_SETTINGS)), "compile": compile}
    return Variant(
        "zoo",
        SHAPES[shape][0],
        overrides,
        tokenizer,
        ids,
        "shakespeare",
        device="cuda" if shape == "gpu" else "cpu",
    )


def zoo_worker(steps: int, warmup: int, shape: str, compile: bool) -> None:
    """In a fresh process, like nanoGPT's: milliseconds of each of ``steps`` steps (each
    ends by reading the loss, so on a GPU each is timed to its end, as nanoGPT's are)."""
    variant = zoo_variant(shape, compile)
    for _ in range(warmup):
        variant.step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        variant.step()
        times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps(times))


def matmul_peak(dtype_name: str, device: str = "cpu", repeats: int = 20) -> float:
    """FLOP/s of the best of ``repeats`` n x n matrix products in ``dtype`` (n = 1024 on a
    CPU, 8192 on a GPU, timed there with CUDA events)."""
    import torch

    n = 8192 if device == "cuda" else 1024
    dtype = getattr(torch, dtype_name)
    a, b = (torch.randn(n, n, dtype=dtype, device=device) for _ in range(2))
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            a @ b
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3)
        else:
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


def flops_per_step(variant) -> float:
    """nanoGPT's estimate (PaLM appendix B): 6 N per token for the matrices, plus
    12 L H Q T per token for attention; N without the position table."""
    cfg, model = variant.model_cfg, variant.model.module
    params = sum(p.numel() for p in model.parameters()) - model.pos_emb.weight.numel()
    L, H, Q, T = cfg.n_layer, cfg.n_head, cfg.n_embd // cfg.n_head, cfg.block_size
    per_token = 6 * params + 12 * L * H * Q * T
    return per_token * T * variant.cfg.batch_size


def profile_zoo(shape: str, compile: bool, steps: int = 20) -> tuple[str, float | None]:
    """The torch profiler's summary of ``steps`` zoo steps, by operator (self CPU time, or on
    a GPU self device time), and on a GPU the milliseconds per step the GPU was busy."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    variant = zoo_variant(shape, compile)
    for _ in range(10):
        variant.step()
    gpu = shape == "gpu"
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if gpu else [])]
    with profile(activities=activities) as prof:
        for _ in range(steps):
            variant.step()
    averages = prof.key_averages()
    if not gpu:
        return averages.table(sort_by="self_cpu_time_total", row_limit=18), None
    # The kernels and copies themselves: a replayed CUDA graph's have no operator above them.
    busy_ms = (
        sum(e.self_device_time_total for e in averages if e.device_type == DeviceType.CUDA)
        / 1e3
        / steps
    )
    return averages.table(sort_by="self_device_time_total", row_limit=18), busy_ms


# Kernel kinds by the profiler's operator names; an operator under the optimizer's step
# (or the gradient clipping before it) counts as the optimizer's, whatever it is.
KINDS = (
    ("matrix products", ("aten::mm", "aten::addmm", "aten::bmm")),
    ("attention (SDPA)", ("scaled_dot_product",)),
    ("GELU", ("gelu",)),
    ("layer norm", ("layer_norm",)),
    ("loss (cross-entropy)", ("log_softmax", "nll_loss")),
)
OPTIMIZER_SCOPES = ("Optimizer.step", "Optimizer.zero_grad", "clip_grad")


def kind_of(event) -> str:
    scope = event
    while scope is not None:
        if scope.name.startswith(OPTIMIZER_SCOPES):
            return "optimizer step and clipping"
        scope = scope.cpu_parent
    for kind, names in KINDS:
        if any(name in event.name for name in names):
            return kind
    return "everything else (element-wise, views, autograd, Python)"


def nanogpt_step(work: Path):
    """nanoGPT's CPU-recipe training step, as its train.py takes it (forward, backward,
    clipping at 1.0, its AdamW from configure_optimizers), on its model.py from ``work``."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("nanogpt_model", work / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = module.GPTConfig(
        block_size=64, vocab_size=65, n_layer=4, n_head=4, n_embd=128, dropout=0.0, bias=False
    )
    model = module.GPT(config)
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), "cpu")

    def step() -> None:
        x, y = (torch.randint(65, (12, 64)) for _ in range(2))
        _, loss = model(x, y)
        loss.backward()
        with torch.profiler.record_function("clip_grad"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def time_by_kind(step, steps: int = 20) -> dict[str, float]:
    """Milliseconds per step of each kernel kind: the operators' own (self) times under the
    torch profiler, which times them by the wall clock."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    kinds: dict[str, float] = {}
    for event in prof.events():
        kind = kind_of(event)
        kinds[kind] = kinds.get(kind, 0.0) + event.self_cpu_time_total / 1e3 / steps
    return kinds


def where_the_time_goes(work: Path) -> dict:
    """Both sides' steps profiled in this process, by kernel kind: the table that says
    where a step's CPU time goes and where the two differ."""
    steps = {"zoo": zoo_variant("cpu").step, "nanoGPT": nanogpt_step(work)}
    rounds: dict[str, list[dict[str, float]]] = {"zoo": [], "nanoGPT": []}
    for r in range(3):  # alternating, each kind's median over the rounds
        for side in ("nanoGPT", "zoo") if r % 2 == 0 else ("zoo", "nanoGPT"):
            rounds[side].append(time_by_kind(steps[side]))
    nano_kinds, zoo_kinds = (
        {
            kind: statistics.median(r.get(kind, 0.0) for r in rounds[side])
            for kind in rounds[side][0]
        }
        for side in ("nanoGPT", "zoo")
    )
    order = [kind for kind, _ in KINDS] + [
        "optimizer step and clipping",
        "everything else (element-wise, views, autograd, Python)",
    ]
    total_nano, total_zoo = sum(nano_kinds.values()), sum(zoo_kinds.values())
    rows = [
        {
            "kind": kind,
            "nanogpt_ms": nano_kinds.get(kind, 0.0),
            "zoo_ms": zoo_kinds.get(kind, 0.0),
            "zoo_share": zoo_kinds.get(kind, 0.0) / total_zoo,
        }
        for kind in order
    ]
    rows.append(
        {"kind": "whole step", "nanogpt_ms": total_nano, "zoo_ms": total_zoo, "zoo_share": 1.0}
    )
    for row in rows:
        print(f"{row['kind']:<58} nanoGPT {row['nanogpt_ms']:7.2f}  zoo {row['zoo_ms']:7.2f}")
    return results_table(
        "Where a step's time goes: each operator's own milliseconds per step under the torch "
        "profiler (wall clock, its own overhead included; on a busy machine read the shares), "
        "both sides profiled in one process, one thread, 3 alternating rounds (each kind's median)",
        [
            ("kind", "kernel kind"),
            ("nanogpt_ms", "nanoGPT ms", ".2f"),
            ("zoo_ms", "zoo ms", ".2f"),
            ("zoo_share", "share of zoo's step", ".0%"),
        ],
        rows,
    )


def parse_args(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument(
        "--nanogpt",
        default=os.environ.get("NANOGPT_DIR"),
        help="a nanoGPT checkout (default: $NANOGPT_DIR)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per side")
    parser.add_argument("--steps", type=int, default=60, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps per round")
    parser.add_argument(
        "--no-profile", action="store_true", help="skip the profiled breakdown of a step"
    )
    parser.add_argument(
        "--shape",
        choices=sorted(SHAPES),
        default="cpu",
        help="nanoGPT's CPU recipe (4 x 128, block 64) or its GPU one (6 x 384, "
        "block 256, batch 64, on CUDA)",
    )
    parser.add_argument("--compile", action="store_true", help="torch.compile on both sides")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for zoo's side, as `zoo run --set` takes it",
    )
    parser.add_argument("--zoo-worker", type=int, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    ZOO_SETTINGS[:] = args.set
    if args.zoo_worker:
        zoo_worker(args.zoo_worker, args.warmup, args.shape, args.compile)
        return 0
    checkout = Path(args.nanogpt).expanduser() if args.nanogpt else None
    if checkout is None or not all((checkout / name).is_file() for name in NANOGPT_FILES):
        print(
            "skipped: no nanoGPT checkout (give --nanogpt DIR or set NANOGPT_DIR to a clone "
            "of https://github.com/karpathy/nanoGPT)"
        )
        return 0

    gpu = args.shape == "gpu"
    if gpu and not __import__("torch").cuda.is_available():
        print("skipped: --shape gpu needs a CUDA device, and torch sees none")
        return 0
    header(
        f"training side by side with nanoGPT's train.py, {SHAPES[args.shape][0]} shape, "
        f"compile {args.compile}"
    )
    print(
        f"# OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} for both sides; "
        f"{args.rounds} alternating rounds of {args.steps} timed steps after {args.warmup}"
    )
    work = Path(tempfile.mkdtemp(prefix="nanogpt-"))
    try:
        prepare_nanogpt(checkout, work)
        times = {"nanoGPT": [], "zoo": []}
        cpu = {"nanoGPT": [], "zoo": []}  # CPU ms per step, from two run lengths
        for r in range(args.rounds):
            for side in ("nanoGPT", "zoo") if r % 2 == 0 else ("zoo", "nanoGPT"):
                got, short = run_side(side, work, args.steps, args.warmup, args.shape, args.compile)
                times[side] += got
                if gpu:  # the GPU's time is the wall clock's; CPU time is no measure of it
                    cpu[side].append(float("nan"))
                else:
                    _, long = run_side(
                        side, work, 2 * args.steps, args.warmup, args.shape, args.compile
                    )
                    cpu[side].append((long - short) * 1e3 / args.steps)
                print(
                    f"round {r} {side:<8} median {statistics.median(got):6.2f} ms/step "
                    f"({len(got)} steps), {cpu[side][-1]:6.2f} CPU ms/step ({load()})",
                    flush=True,
                )
        breakdown = None if gpu or args.no_profile else where_the_time_goes(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    nano, zoo = (statistics.median(times[s]) for s in ("nanoGPT", "zoo"))
    print(f"median ms/step: nanoGPT {nano:.2f}, zoo {zoo:.2f}; zoo is {nano / zoo:.2f}x nanoGPT")
    if gpu:
        nano_cpu, zoo_cpu = nano, zoo  # MFU per wall-clock ms: the GPU's time
    else:
        nano_cpu, zoo_cpu = (statistics.median(cpu[s]) for s in ("nanoGPT", "zoo"))
        print(
            f"median CPU ms/step (the CPU time of a run of {2 * args.steps} steps less that "
            f"of {args.steps}, over {args.steps}): nanoGPT {nano_cpu:.2f}, zoo "
            f"{zoo_cpu:.2f}; zoo is {nano_cpu / zoo_cpu:.2f}x nanoGPT"
        )

    speed = results_table(
        "",
        [
            ("side", "side"),
            ("ms_step", "ms per step (median)", ".2f"),
            ("speedup", "zoo vs nanoGPT", ".2f"),
        ],
        [
            {"side": "nanoGPT train.py", "ms_step": nano, "speedup": None},
            {"side": f"zoo {SHAPES[args.shape][0]}", "ms_step": zoo, "speedup": nano / zoo},
        ],
        readme=not gpu,
    )
    settings = "".join(f", {item}" for item in args.set)
    write_results(
        "nanogpt"
        if not gpu
        else f"nanogpt_gpu_{'compile' if args.compile else 'eager'}"
        + "".join("_" + re.sub(r"\W+", "_", item) for item in args.set),
        title=f"Training speed against nanoGPT's own train.py ({args.shape.upper()}"
        f"{', torch.compile' if args.compile else ''}{settings})",
        about=f"nanoGPT's `train.py` with its {args.shape.upper()} recipe beside zoo at the same "
        f"shape ({SHAPES[args.shape][0]}) as `zoo run` builds it; {args.rounds} alternating "
        f"rounds of {args.steps} timed steps after {args.warmup}, each side in fresh "
        "processes."
        + (
            " The ratio depends on the host: a small model's GPU step without CUDA graphs "
            "is paced by the host's CPU."
            if gpu
            else ""
        ),
        tables=[speed, *([breakdown] if breakdown else [])],
        notes=[]
        if gpu
        else [
            f"In CPU time per step: zoo {zoo_cpu:.2f} ms, nanoGPT "
            f"{nano_cpu:.2f} ms ({nano_cpu / zoo_cpu:.2f}x)."
        ],
    )

    variant = zoo_variant(args.shape)
    flops = flops_per_step(variant)
    per = "wall-clock" if gpu else "CPU"
    print(
        f"# zoo precision {variant.model.precision}; model FLOPs per step {flops / 1e9:.3f} G "
        f"(nanoGPT's estimate: 6N + 12LHQT per token)"
    )
    # On the CPU, nanoGPT's recipe runs in fp32: the peak that matters is that of zoo's own
    # precision (an emulated bf16 peak would say nothing of either side).
    own = "bfloat16" if "bf16" in str(variant.model.precision) else "float32"
    for dtype in ("bfloat16", "float32") if gpu else (own,):
        peak = matmul_peak(dtype, "cuda" if gpu else "cpu")
        print(
            f"{dtype} matmul peak (best of 20): {peak / 1e9:.1f} GFLOP/s; "
            f"MFU (per {per} ms/step) zoo {flops / (zoo_cpu / 1e3) / peak:.1%}, "
            f"nanoGPT {flops / (nano_cpu / 1e3) / peak:.1%}"
        )
    del variant
    if gpu and not args.no_profile:  # on the CPU, the breakdown above says it for both sides
        table, busy_ms = profile_zoo(args.shape, args.compile)
        print(table)
        if busy_ms is not None:  # against the unprofiled median: the profiler slows the host
            print(
                f"GPU busy {busy_ms:.2f} ms per step, {busy_ms / zoo:.0%} of zoo's median "
                f"step ({zoo:.2f} ms); the rest is the GPU waiting for the host"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
