#!/usr/bin/env bash
# The device checks, in one go on a GPU machine (under 8 minutes on one H100):
#   1. the packing benchmark: a 32-cell sweep of decoder-char (300 steps), --jobs 1 against
#      --jobs auto, with each cell's time split by phase (sweep_jobs_cuda.json)
#   2. the stacked-seeds variant in the same benchmark, when `zoo sweep` has --stack-seeds
#   3. bench_nanogpt.py side by side with nanoGPT's train.py, eager and compiled
#      (NANOGPT_DIR: a checkout of github.com/karpathy/nanoGPT; skipped without one)
#   4. the whole test suite, in SHARDS parallel pytest processes
# Each step has its own time limit and writes its own JSON under benchmarks/results/ as it
# ends; gpu_check.json says how every step ended (a failed or skipped step included), and
# the docs are rendered from whatever was written. Run from the repository root:
#     bash benchmarks/gpu_check.sh
# Smaller settings (the CPU smoke run, say) come from the environment:
#     GPU_CHECK_DEVICE=cpu GPU_CHECK_SEEDS=2 GPU_CHECK_STEPS=5 GPU_CHECK_TESTS=tests/test_x.py \
#     ZOO_BENCH_RESULTS=/tmp/results GPU_CHECK_RENDER=0 bash benchmarks/gpu_check.sh
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || command -v python3 )}
DEVICE=${GPU_CHECK_DEVICE:-cuda}
SEEDS=${GPU_CHECK_SEEDS:-32}
STEPS=${GPU_CHECK_STEPS:-300}
MODEL=${GPU_CHECK_MODEL:-decoder-char}
DATASET=${GPU_CHECK_DATASET:-shakespeare}
TESTS=${GPU_CHECK_TESTS:-tests}
SHARDS=${GPU_CHECK_SHARDS:-4}
BUDGET=${GPU_CHECK_BUDGET:-470}  # seconds for everything; the tests get what is left
RESULTS=${ZOO_BENCH_RESULTS:-benchmarks/results}
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/zoo-gpu-check.XXXXXX")
export ZOO_BENCH_RESULTS=$RESULTS
STARTED=$(date +%s)
echo "# gpu_check: logs in $LOGS, results in $RESULTS, python $PYTHON"

left() { echo $((BUDGET - ($(date +%s) - STARTED))); }

# step NAME SECONDS COMMAND...: run it under a time limit, log it, and record how it ended
# (ok, failed with its exit code, or timed out) in gpu_check.json whatever happens.
step() {
    local name=$1 limit=$2 rc=0 began
    shift 2
    if [ "$limit" -le 10 ]; then
        record "$name" skipped 0 "no time left in the ${BUDGET}s budget"
        return 0
    fi
    echo "# $name (at most ${limit}s): $*"
    began=$(date +%s)
    timeout --signal=INT --kill-after=20 "$limit" "$@" >"$LOGS/$name.log" 2>&1 || rc=$?
    local seconds=$(($(date +%s) - began)) status=ok
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then status=timeout; elif [ "$rc" -ne 0 ]; then status="failed ($rc)"; fi
    tail -n 15 "$LOGS/$name.log"
    record "$name" "$status" "$seconds" "$(tail -n 3 "$LOGS/$name.log" | tr '\n' ' ' | cut -c1-300)"
}

record() {
    "$PYTHON" benchmarks/gpu_check_record.py "$@" || echo "# could not record step $1" >&2
}

record environment ok 0 "$("$PYTHON" - <<'EOF' 2>&1 | tail -n 1
import os, torch
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
print(f"{gpu}; torch {torch.__version__}; {os.cpu_count()} cores")
EOF
)"

variants=jobs1,jobsN
if "$PYTHON" -m zoo sweep --help 2>/dev/null | grep -q -- "--stack-seeds" &&
    "$PYTHON" benchmarks/bench_sweep_jobs.py --help | grep -q stacked; then
    variants=jobs1,jobsN,stacked
else
    echo "# no --stack-seeds (or no stacked variant in bench_sweep_jobs.py): skipped"
    record stacked-seeds skipped 0 "zoo sweep has no --stack-seeds on this checkout"
fi
step packing $(( $(left) < 270 ? $(left) : 270 )) "$PYTHON" benchmarks/bench_sweep_jobs.py \
    --device "$DEVICE" --model "$MODEL" --dataset "$DATASET" --seeds "$SEEDS" \
    --steps "$STEPS" --jobs auto --rounds 1 --variants "$variants"

NANOGPT_DIR=${NANOGPT_DIR:-$( [ -d shared/nanoGPT ] && echo shared/nanoGPT || echo /tmp/nanoGPT )}
if [ "$DEVICE" = cuda ] && [ -f "$NANOGPT_DIR/train.py" ]; then
    for mode in eager compile; do
        step "nanogpt-$mode" $(( $(left) < 80 ? $(left) : 80 )) "$PYTHON" benchmarks/bench_nanogpt.py \
            --nanogpt "$NANOGPT_DIR" --shape gpu --rounds 1 --steps 100 --warmup 20 --no-profile \
            $( [ $mode = compile ] && echo --compile )
    done
else
    record nanogpt skipped 0 "no nanoGPT checkout at $NANOGPT_DIR (set NANOGPT_DIR), or not on a GPU"
fi

# The suite in SHARDS processes, files dealt round-robin; each shard writes JUnit XML.
tests() {
    local files shard pids=() rc=0
    mapfile -t files < <(find $TESTS -name 'test_*.py' | sort)
    for ((shard = 0; shard < SHARDS; shard++)); do
        local mine=()
        for ((i = shard; i < ${#files[@]}; i += SHARDS)); do mine+=("${files[$i]}"); done
        [ ${#mine[@]} -gt 0 ] || continue
        OMP_NUM_THREADS=2 "$PYTHON" -m pytest -q -p no:randomly -p no:cacheprovider \
            --junitxml="$LOGS/tests-$shard.xml" "${mine[@]}" >"$LOGS/tests-$shard.log" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
    tail -n 3 "$LOGS"/tests-*.log
    return "$rc"
}
export -f tests
export TESTS SHARDS PYTHON LOGS
step tests "$(left)" bash -c tests
# the suite's counts, from the shards' reports (a shard stopped by the limit writes its own)
if compgen -G "$LOGS/tests-*.xml" >/dev/null; then record --junit "$LOGS"/tests-*.xml; fi

if [ "${GPU_CHECK_RENDER:-1}" = 1 ]; then
    "$PYTHON" scripts/render_benchmarks.py
fi
echo "# gpu_check: done in $(($(date +%s) - STARTED))s; $RESULTS/gpu_check.json says how each step ended"
