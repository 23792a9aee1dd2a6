"""`zoo ui` on a large store: how long the server takes to start, and to answer the run
list's first page, a filter, a sort, another page, the comparison and a run's page, on a
synthetic store of 10,000 runs (rows written straight into SQLite, as training leaves them).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ui.py --runs 10000 --repeat 5

Each figure is the wall time of one HTTP request from this process to a `zoo ui` process
started for the benchmark; the first page's is the first request the server answers, the
others the median of --repeat different requests, each asked once (so none is answered
from what the server keeps until the store changes), except the comparison asked again.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import header, load, percentile, table, write_results  # noqa: E402

MODELS = {  # each with a setting of its architecture's own
    "decoder-char": {"gelu": "exact"},
    "decoder-bpe": {"gelu": "tanh"},
    "encoder-char": {"pooling": "mean"},
    "lstm-char": {"bidirectional": False},
    "gpt2-char": {"layer_norm_epsilon": 1e-5},
    "llama-char": {"rope_theta": 10000.0},
}
DATASETS = ("shakespeare", "digits", "emotion")
SEEDS = 5
FILTER = "lr < 2e-3 and model == 'decoder-char' and val_bpc < 3.5"
# a trained run's recorded config (zoo.train.provenance), as training writes it
MODEL = {"n_head": 4, "block_size": 128, "dropout": 0.1, "bias": True, "tie_weights": True}
TRAIN = {
    "steps": 500,
    "time": None,
    "batch_size": 32,
    "min_lr": 1e-4,
    "warmup_steps": 50,
    "weight_decay": 0.1,
    "beta1": 0.9,
    "beta2": 0.95,
    "grad_clip": 1.0,
    "precision": "auto",
    "eval_interval": 100,
    "eval_batches": 20,
    "eval_batch_size": 64,
    "compile": False,
    "checkpoint_every": 500,
    "checkpoint_seconds": 600.0,
    "sample_tokens": 300,
    "samples": 2,
    "temperature": 0.8,
    "top_k": None,
}
INCIDENTAL = ["checkpoint_every", "checkpoint_seconds", "sample_tokens", "samples", "temperature"]
PROVENANCE = {
    "dataset_id": "karpathy/tiny_shakespeare",
    "dataset_location": "/data/datasets/karpathy/tiny_shakespeare",
    "dataset_fingerprint": "27e03a7467eb2f0d",
    "versions": {
        "zoo": "0.1.0",
        "python": "3.11.7",
        "torch": "2.13.0+cpu",
        "numpy": "2.4.6",
        "datasets": "5.2.0",
        "tokenizers": "0.23.3",
        "plugin:zoo.plugins": "sha256:95d795514f5c482c",
        "plugin:zoo.pipelines": "sha256:95d795514f5c482c",
    },
    "plugins": {
        name: {
            "distribution": "zoo",
            "version": "0.1.0",
            "source_sha256": "95d795514f5c482c",
            "source": "builtin",
        }
        for name in ("zoo.plugins", "zoo.pipelines")
    },
    "git_commit": "f064cdf2b0eb7ff6954038c8d73b5df7f3041885",
    "git_dirty": False,
    "device": "auto",
    "machine": {
        "cpu": "Intel(R) Xeon(R) Processor",
        "cpu_flags": ["avx2", "avx512f", "avx512_bf16"],
        "cpu_capability": "AVX512",
        "device": "cpu",
        "precision": "bf16",
    },
    "threads": {"threads": 1, "wait_policy": None, "usable": 2, "idle": None},
    "text_column": "text",
    "label_column": None,
    "spec": {"task": "language-modeling", "vocab_size": 68, "num_classes": None, "pad_id": 0},
}


def synthetic_store(home: Path, runs: int, seed: int = 0, distinct: bool = False) -> None:
    """``runs`` finished runs of a few models x datasets x seeds x settings, in one
    transaction (zoo's own schema, made by opening the store). ``distinct``: each run with
    a learning rate of its own (drawn log-uniformly, as a search draws them), so that no two
    runs share their settings."""
    from zoo.records.store import Store

    rng = random.Random(seed)
    rows = []
    for n in range(runs):
        model = list(MODELS)[n % len(MODELS)]
        dataset = DATASETS[(n // len(MODELS)) % len(DATASETS)]
        lr, n_layer = rng.choice((1e-3, 3e-3, 1e-2)), rng.choice((2, 4, 6))
        if distinct:
            lr = 10 ** rng.uniform(-3, -2)
        run_seed = n % SEEDS
        val = 2.5 + 0.1 * n_layer * rng.random() + 0.2 * rng.random()
        run_id = f"20260101-{n:06d}-{rng.getrandbits(16):04x}"
        config = {  # every resolved setting, as training records them (about 2 kB of JSON)
            "run_id": run_id,
            "seed": run_seed,
            "configs": {
                "model": {**MODEL, **MODELS[model], "n_layer": n_layer, "n_embd": 64 * n_layer},
                "tokenizer": {"lowercase": False},
                "train": {**TRAIN, "lr": lr},
            },
            "incidental": {"train": INCIDENTAL},
            **PROVENANCE,
            "timing": {"phases": {"train": 600 + 60 * rng.random()}, "measured": 900.0},
        }
        metrics = {"val_bpc": val, "test_bpc": val + 0.02, "train_loss": val - 0.1, "steps": 500}
        rows.append(
            (
                run_id,
                "train",
                "finished",
                1.7e9 + n,
                model,
                model.split("-")[0],
                model.split("-")[1],
                dataset,
                "language-modeling",
                100_000 * n_layer,
                run_seed,
                f"{model}-{lr}-{n_layer}-{dataset}-{run_seed}",
                json.dumps(metrics),
                json.dumps(config),
                30.0 + rng.random(),
            )
        )
    with Store(home / "zoo.db") as store:
        store.conn.execute("BEGIN")
        store.conn.executemany(
            "INSERT INTO runs (id, kind, status, created, model, architecture, tokenizer, "
            "dataset, task, params, seed, config_hash, metrics, config, duration) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        store.conn.execute("COMMIT")


def timed(url: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as answer:
        body = answer.read()
        assert answer.status == 200, (url, answer.status)
    return time.perf_counter() - start, body


def start_server(home: Path) -> tuple[subprocess.Popen, str, float]:
    """`zoo ui --port 0` in a process of its own: the URL it prints, and the seconds from
    starting the process to the first answer (a static file, no store read)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "zoo", "ui", "--port", "0"],
        env={**os.environ, "ZOO_HOME": str(home)},
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    url = line.split(" at ")[1].split()[0]
    timed(url + "/static/zoo.css")
    return process, url, time.perf_counter() - start


def first_asks(url: str, paths: list[str]) -> float:
    """The median time of requests each asked for the first time (none answered from what
    the server keeps between requests)."""
    return percentile([timed(url + path)[0] for path in paths], 0.5)


def variants(repeat: int, run_ids: list[str]) -> dict[str, list[str]]:
    """Per kind of request, ``repeat`` different ones."""
    metrics = ("-val_bpc", "test_bpc", "-train_loss", "params", "-n_layer", "lr", "-seed")
    return {
        "a filter (--where)": [
            "/runs?" + urllib.parse.urlencode({"where": FILTER.replace("3.5", f"{3.5 - n / 20}")})
            for n in range(repeat)
        ],
        "a sort by a metric or setting": [
            f"/runs?sort={metrics[n % len(metrics)]}" for n in range(repeat)
        ],
        "another page": [f"/runs?page={n + 2}" for n in range(repeat)],
        "a run's page": [f"/runs/{run_id}" for run_id in run_ids[:repeat]],
    }


def serve_and_ask(home: Path, runs: int, repeat: int) -> list[dict]:
    process, url, started = start_server(home)
    try:
        first, body = timed(url + "/runs")
        assert f"of {runs} runs".encode() in body
        compared, _ = timed(url + "/compare")  # computed once per change of the store
        run_ids = [part.split(b'"')[0].decode() for part in body.split(b'href="/runs/')[1:]]
        figures = {
            what: first_asks(url, paths) for what, paths in variants(repeat, run_ids).items()
        }
        again = percentile([timed(url + "/compare")[0] for _ in range(repeat)], 0.5)
    finally:
        process.terminate()
        process.wait(timeout=30)
    return [
        {"what": "start: process to first answer", "seconds": started},
        {"what": "the first page of runs", "seconds": first},
        {"what": "the comparison, first asked", "seconds": compared},
        *({"what": what, "seconds": seconds} for what, seconds in figures.items()),
        {"what": "the comparison, asked again", "seconds": again},
    ]


def filter_first(home: Path) -> float:
    """A filter as the first request of a fresh server: it waits for every run's row."""
    process, url, _ = start_server(home)
    try:
        return timed(url + "/runs?" + urllib.parse.urlencode({"where": FILTER}))[0]
    finally:
        process.terminate()
        process.wait(timeout=30)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    header(f"zoo ui on a store of {args.runs:,} runs")
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "runs"
        home.mkdir()
        synthetic_store(home, args.runs)
        rows = serve_and_ask(home, args.runs, args.repeat)
        rows.append(
            {"what": "a filter as a fresh server's first request", "seconds": filter_first(home)}
        )
        home = Path(folder) / "distinct"
        home.mkdir()
        synthetic_store(home, args.runs, distinct=True)
        rows.append(
            {
                "what": "the same, every run with settings of its own",
                "seconds": filter_first(home),
            }
        )
    for row in rows:
        print(f"{row['what']:<44} {row['seconds']:.3f} s")
    print(f"# after: {load()}")
    write_results(
        "ui",
        title="`zoo ui` on a large store",
        about=f"Wall time of HTTP requests to `zoo ui` over a synthetic store of {args.runs:,} "
        "finished runs (6 models x 3 datasets x 5 seeds x 9 settings; each run's config about "
        "2 kB of JSON, every setting and the provenance training records): from the process's "
        "start to its first answer, then the first page of the run list, the comparison, "
        f"and {args.repeat} different requests of each kind, each asked once (the median). "
        f"The filter is `{FILTER}` with other thresholds. The server reads every run's row "
        "once it serves (the first page does not wait for that: the store pages it); a filter "
        "asked before that read is done waits for it, as the last two rows show. Runs that "
        "share their settings (the seeds and datasets of a configuration) share one reading of "
        "them; the last row's store, otherwise the same, gives every run a learning rate of its "
        "own (as a search draws them), so that no two share any.",
        tables=[
            table(
                f"{args.runs:,} runs; medians of {args.repeat} different requests of each kind",
                [("what", "request"), ("seconds", "seconds", ".3f")],
                rows,
            )
        ],
        notes=["Targets: start under 2 s; the first page and a filter under 1 s."],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
