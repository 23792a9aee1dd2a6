#!/usr/bin/env bash
# Set up zoo in ./.venv: the CPU build of torch (only if the venv has no torch yet), then
# zoo itself in editable mode with the test, ray, tune, bench, docs, tracker and export extras. Safe to
# run again.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    # Pinned: a bare 'torch' would resolve to a multi-GB CUDA build.
    .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
.venv/bin/python -m pip install --quiet -e ".[test,ray,tune,bench,docs,tensorboard,mlflow,export]"
