#!/usr/bin/env bash
# The comparison workflow end to end, as recorded in benchmarks/RESULTS.md ("Comparison
# tables, sweeps, evaluation, plots"): a sweep, the same sweep again (trains nothing), the
# table as csv read back by pandas, an evaluation on another dataset, curves, a reproduction.
#
#   bash benchmarks/sweep_acceptance.sh [MODELS] [DATASETS] [STEPS]
#   bash benchmarks/sweep_acceptance.sh "decoder-char digits-char" "shakespeare digits" 100
#
# Runs go to a fresh ZOO_HOME (printed); pysrc.txt, four Python standard-library modules,
# is made there as a local text dataset. Defaults: decoder-char on shakespeare and pysrc.txt.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
zoo="${ZOO:-$here/.venv/bin/zoo}"
python="${PYTHON:-$here/.venv/bin/python}"
work="$(mktemp -d /tmp/zoo-sweep-XXXX)"
export ZOO_HOME="$work/runs"
cd "$work"
stdlib="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')"
cat "$stdlib/argparse.py" "$stdlib/difflib.py" "$stdlib/inspect.py" "$stdlib/typing.py" > pysrc.txt

models="${1:-decoder-char}"
datasets="${2:-shakespeare pysrc.txt}"
steps="${3:-100}"
echo "ZOO_HOME=$ZOO_HOME; $(nproc) cores; $(uptime)"

echo "== first sweep"
time "$zoo" sweep $models --on $datasets --seeds 2 --steps "$steps"
echo "== the same sweep again: trains nothing"
time "$zoo" sweep $models --on $datasets --seeds 2 --steps "$steps" 2>&1 | grep "sweep"

echo "== csv parses back to the same numbers as zoo.compare()"
"$zoo" compare --format csv > table.csv
"$python" - <<'EOF'
import pandas as pd
import zoo

back, cells = pd.read_csv("table.csv"), zoo.compare()
same = (back[["mean", "std", "n"]].to_numpy() == cells[["mean", "std", "n"]].to_numpy()).all()
print(back[["model", "dataset", "mean", "std", "n"]].to_string(index=False))
print("csv == zoo.compare():", bool(same))
EOF

first="$("$zoo" runs --json | "$python" -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])')"
echo "== evaluation of $first on pysrc.txt (validation) and plots"
"$zoo" eval "$first" pysrc.txt --split validation
"$zoo" compare --evals
"$zoo" plot "$first" --output "$work/curves.png"
"$zoo" compare --plot "$work/compare.png" > /dev/null
echo "== reproduce $first"
time "$zoo" reproduce "$first" --quiet
echo "plots: $work/curves.png $work/compare.png"
