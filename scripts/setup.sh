#!/usr/bin/env bash
# Set up zoo in ./.venv: the CPU build of torch (only if the venv has no torch yet), then
# zoo itself in editable mode with the test, ray, tune, bench, docs, tracker, export and ui
# extras, and chromium for the browser tests. Safe to run again.
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
.venv/bin/python -m pip install --quiet -e ".[test,ray,tune,bench,docs,tensorboard,mlflow,export,ui]"
# The browser tests of zoo ui drive Debian's chromium (never a browser playwright downloads);
# installed here only as root, with apt-get, where it is missing. Without it they are skipped.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1; then
    apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1 \
        || { apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; } \
        || echo "setup.sh: chromium not installed; the browser tests of zoo ui will be skipped" >&2
fi
